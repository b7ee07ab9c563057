import { type Kysely, sql } from 'kysely';

/**
 * The per-project suppression list: addresses no email of the project is delivered to (hard
 * bounces, complaints, manual entries). One row per (project, lower-cased address), the key
 * every send path probes (a join in the batch SQL of /v1/send and the campaign fan-out, one
 * key lookup in the delivery query). `source_email_id` names the email whose notification
 * added the entry; no foreign key, so the entry outlives that email's row.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE suppressions (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      email text NOT NULL CHECK (email = lower(email)),
      reason text NOT NULL CHECK (reason IN ('HARD_BOUNCE', 'COMPLAINT', 'MANUAL')),
      detail text,
      source_email_id uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, email)
    )`.execute(db);
  // The list, newest first (keyset: created_at, email).
  await sql`CREATE INDEX suppressions_project_created_idx ON suppressions (project_id, created_at, email)`.execute(db);
  // Case-insensitive substring search on the address (pg_trgm, as for contacts).
  await sql`CREATE INDEX suppressions_email_trgm_idx ON suppressions USING gin (email gin_trgm_ops)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE suppressions`.execute(db);
}
