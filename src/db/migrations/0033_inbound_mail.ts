import { type Kysely, sql } from 'kysely';

/**
 * Inbound mail for the projects' own domains (docs/bounces.md "Inbound mail", src/modules/bounces).
 *
 * - domains.inbound_enabled: the project opts a verified domain (and its subdomains) in; the
 *   receiver accepts RCPT for it while the domain is verified. The receiver's lookup reads the
 *   partial unique index domains_verified_domain_key (domain) WHERE verified.
 * - inbound_messages: one row per (received message, project): the parsed fields and the bodies
 *   (text and html, each up to 256 KB), referenced from the `email.received` event's data
 *   (`inboundMessageId`), which carries only the first 2,000 characters of the text. UNIQUE
 *   (project_id, message_key) makes a message delivered twice (a lost 250, a retry) record once.
 *   No foreign key to contacts or events: a project reset wipes it with them
 *   (src/modules/projects/lifecycle.repo.ts), its deletion cascades.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE domains ADD COLUMN inbound_enabled boolean NOT NULL DEFAULT false`.execute(db);
  await sql`
    CREATE TABLE inbound_messages (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      received_at timestamptz NOT NULL DEFAULT now(),
      message_key text NOT NULL,
      contact_id uuid NOT NULL,
      event_id uuid,
      mail_from text NOT NULL,
      rcpt_to text[] NOT NULL,
      from_address text NOT NULL,
      to_addresses text[] NOT NULL,
      cc_addresses text[] NOT NULL,
      subject text NOT NULL,
      message_id text,
      in_reply_to text,
      campaign_id uuid,
      email_id uuid,
      text_body text NOT NULL,
      text_truncated boolean NOT NULL,
      html_body text,
      html_truncated boolean NOT NULL,
      attachments jsonb NOT NULL,
      size integer NOT NULL,
      UNIQUE (project_id, message_key)
    )`.execute(db);
  await sql`CREATE INDEX inbound_messages_contact_idx ON inbound_messages (project_id, contact_id, received_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE inbound_messages`.execute(db);
  await sql`ALTER TABLE domains DROP COLUMN inbound_enabled`.execute(db);
}
