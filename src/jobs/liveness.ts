import os from 'node:os';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.js';

/**
 * Worker liveness. graphile-worker releases the jobs of a worker that died without stopping
 * (SIGKILL, crash, lost machine) only after 4 hours: a campaign would sit in SENDING that long.
 * Each worker process therefore records a heartbeat every HEARTBEAT_MS; every REAP_EVERY_MS a
 * worker releases the locks held by workers silent for DEAD_AFTER_SECONDS (their jobs run again
 * on a live worker, which every task tolerates: send-email never delivers twice, docs/sending.md).
 */
export const HEARTBEAT_MS = 5_000;
export const REAP_EVERY_MS = 15_000;
export const DEAD_AFTER_SECONDS = 30;

export async function beat(db: Kysely<Database>, workerId: string): Promise<void> {
  await db
    .insertInto('worker_heartbeats')
    .values({ worker_id: workerId, host: os.hostname(), pid: process.pid })
    .onConflict((oc) => oc.column('worker_id').doUpdateSet({ beat_at: sql`now()` }))
    .execute();
}

/** A worker that stopped cleanly has released its jobs: it leaves no heartbeat behind. */
export async function forget(db: Kysely<Database>, workerId: string): Promise<void> {
  await db.deleteFrom('worker_heartbeats').where('worker_id', '=', workerId).execute();
}

/**
 * Releases the jobs (and named queues) locked for more than `deadAfterSeconds` by workers with
 * no heartbeat that recent, then deletes the job rows such a worker left behind that can never
 * run again (graphile-worker retires a running job whose key was re-used — a throttled email
 * rescheduling itself — and only the running worker would have deleted it). Heartbeats older
 * than an hour are dropped. Answers the released worker ids.
 */
export async function releaseDeadWorkers(db: Kysely<Database>, deadAfterSeconds = DEAD_AFTER_SECONDS): Promise<string[]> {
  const { rows } = await sql<{ ids: string[] | null }>`
    WITH silent AS (
      SELECT locked_by AS id FROM graphile_worker._private_jobs
      WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => ${deadAfterSeconds})
      UNION
      SELECT locked_by FROM graphile_worker._private_job_queues
      WHERE locked_by IS NOT NULL AND locked_at < now() - make_interval(secs => ${deadAfterSeconds})
    ),
    dead AS (
      SELECT array_agg(s.id ORDER BY s.id) AS ids FROM silent s
      WHERE NOT EXISTS (
        SELECT 1 FROM worker_heartbeats h WHERE h.worker_id = s.id AND h.beat_at > now() - make_interval(secs => ${deadAfterSeconds}))
    )
    SELECT ids, graphile_worker.force_unlock_workers(ids) FROM dead WHERE ids IS NOT NULL`.execute(db);
  const ids = rows[0]?.ids ?? [];
  if (ids.length > 0) {
    await sql`
      DELETE FROM graphile_worker._private_jobs
      WHERE locked_at IS NULL AND key IS NULL AND attempts >= max_attempts AND last_error IS NULL`.execute(db);
    await db.deleteFrom('worker_heartbeats').where('worker_id', 'in', ids).execute();
  }
  // Heartbeats of workers gone long ago that held no job (or whose stop could not remove it).
  await db.deleteFrom('worker_heartbeats').where('beat_at', '<', sql<Date>`now() - interval '1 hour'`).execute();
  return ids;
}

/** Beats for `workerId` and reaps dead workers until stopped. Errors are logged, never thrown. */
export function startLiveness(db: Kysely<Database>, workerId: string, log: Logger): { stop(): Promise<void> } {
  const reap = async () => {
    const ids = await releaseDeadWorkers(db);
    if (ids.length > 0) log.warn({ workers: ids }, 'released the jobs of workers that stopped without shutting down');
  };
  const guard = (what: string, fn: () => Promise<void>) => () => {
    fn().catch((err: unknown) => log.error({ err }, `worker liveness: ${what} failed`));
  };
  const first = beat(db, workerId).then(reap).catch((err: unknown) => log.error({ err }, 'worker liveness: first beat failed'));
  const beating = setInterval(guard('heartbeat', () => beat(db, workerId)), HEARTBEAT_MS);
  const reaping = setInterval(guard('releasing dead workers', reap), REAP_EVERY_MS);
  beating.unref();
  reaping.unref();
  return {
    async stop() {
      clearInterval(beating);
      clearInterval(reaping);
      await first;
    },
  };
}
