import { type Kysely, sql } from 'kysely';

/**
 * Job worker liveness (src/jobs/liveness.ts): each worker process records a heartbeat; the jobs
 * locked by a worker that stopped beating (killed, crashed, machine lost) are released to the
 * others within a minute, instead of graphile-worker's own 4-hour lock expiry.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE worker_heartbeats (
      worker_id text PRIMARY KEY,
      host text NOT NULL,
      pid integer NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      beat_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE worker_heartbeats`.execute(db);
}
