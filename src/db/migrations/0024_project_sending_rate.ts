import { type Kysely, sql } from 'kysely';

/**
 * Per-project sending rate (docs/projects.md "Sending rate").
 *
 * projects.sending_rate: emails per second, null = the instance default (PROJECT_SENDING_RATE).
 *
 * project_send_slots: the shared throttle of every worker process, one row per project holding
 * the GCRA's theoretical arrival time (`tat`): delivery takes the next slot with one
 * INSERT … ON CONFLICT DO UPDATE … RETURNING (the row lock serialises workers), so the rate holds
 * across processes. UNLOGGED: losing the row in a crash only forgets reservations (the bucket
 * starts full again), and its commits need no WAL flush on the delivery path.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE projects ADD COLUMN sending_rate double precision CHECK (sending_rate > 0)`.execute(db);
  await sql`
    CREATE UNLOGGED TABLE project_send_slots (
      project_id uuid PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
      tat timestamptz NOT NULL
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE project_send_slots`.execute(db);
  await sql`ALTER TABLE projects DROP COLUMN sending_rate`.execute(db);
}
