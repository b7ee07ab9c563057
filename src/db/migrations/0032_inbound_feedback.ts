import { type Kysely, sql } from 'kysely';

/**
 * Bounces and complaints received by the inbound SMTP receiver (src/modules/bounces,
 * docs/bounces.md).
 *
 * - inbound_feedback: one row per (received message, accepted VERP recipient): the raw message
 *   (its first 256 KB: a DSN's report comes before the returned message), what the parser made of
 *   it and what the shared feedback path did. Kept for inspection and replay by the operator CLI.
 *   `project_id`/`email_id` are those the VERP address names (null when the email is gone or is
 *   the instance's own mail).
 * - soft_bounces: one row per (email, report) of a soft bounce, from any source (the receiver or
 *   SES): the counts behind the repeated-soft-bounce rule. UNIQUE (email_id, report_key) makes a
 *   replayed report count once.
 *
 * Neither references `emails` or `contacts`: a project reset wipes those and keeps these (like
 * suppressions, an address's bounce history outlives a reset; lifecycle.repo.ts skips per-row
 * foreign-key triggers only when no kept table references a wiped one).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE inbound_feedback (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      received_at timestamptz NOT NULL DEFAULT now(),
      project_id uuid REFERENCES projects (id) ON DELETE CASCADE,
      email_id uuid,
      remote_address text NOT NULL,
      helo text,
      mail_from text NOT NULL,
      rcpt_to text NOT NULL,
      message_id text,
      raw bytea NOT NULL,
      raw_size integer NOT NULL,
      raw_truncated boolean NOT NULL,
      kind text NOT NULL CHECK (kind IN ('hard-bounce', 'soft-bounce', 'delayed', 'complaint', 'auto-reply', 'other')),
      result jsonb NOT NULL,
      outcome text NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX inbound_feedback_project_idx ON inbound_feedback (project_id, received_at) WHERE project_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX inbound_feedback_email_idx ON inbound_feedback (email_id) WHERE email_id IS NOT NULL`.execute(db);

  await sql`
    CREATE TABLE soft_bounces (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      address text NOT NULL CHECK (address = lower(address)),
      email_id uuid NOT NULL,
      report_key text NOT NULL,
      bounced_at timestamptz NOT NULL DEFAULT now(),
      detail text,
      UNIQUE (email_id, report_key)
    )`.execute(db);
  await sql`CREATE INDEX soft_bounces_address_idx ON soft_bounces (project_id, address, bounced_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE soft_bounces`.execute(db);
  await sql`DROP TABLE inbound_feedback`.execute(db);
}
