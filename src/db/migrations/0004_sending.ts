import { type Kysely, sql } from 'kysely';

/**
 * Sending: verified sender domains with their DKIM keys, templates, one row per email
 * (whatever sent it: /v1/send, campaigns, workflows, tests), attachments stored once per
 * send request, and the capture outbox used when no SMTP_URL is configured.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // Why and when a project was disabled (auto-disable on bounces/complaints, or an operator).
  await sql`ALTER TABLE projects ADD COLUMN disabled_reason text, ADD COLUMN disabled_at timestamptz`.execute(db);

  await sql`
    CREATE TABLE domains (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      domain text NOT NULL CHECK (domain = lower(domain)),
      dkim_selector text NOT NULL,
      dkim_public_key text NOT NULL,
      -- AES-256-GCM with a key derived from SECRET (src/lib/secret-box.ts).
      dkim_private_key text NOT NULL,
      verified boolean NOT NULL DEFAULT false,
      verified_at timestamptz,
      last_checked_at timestamptz,
      -- Per-record outcome of the last check: [{type, name, value, purpose, verified, error?}].
      records jsonb NOT NULL DEFAULT '[]',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX domains_project_domain_key ON domains (project_id, domain)`.execute(db);
  // A domain is verified by at most one project.
  await sql`CREATE UNIQUE INDEX domains_verified_domain_key ON domains (domain) WHERE verified`.execute(db);

  await sql`
    CREATE TABLE templates (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL DEFAULT '',
      description text NOT NULL DEFAULT '',
      subject text NOT NULL DEFAULT '',
      body text NOT NULL DEFAULT '',
      from_email text NOT NULL,
      from_name text,
      reply_to text,
      type text NOT NULL DEFAULT 'MARKETING' CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX templates_project_created_idx ON templates (project_id, created_at, id)`.execute(db);

  await sql`
    CREATE TABLE attachment_sets (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      -- [{filename, contentType, cid?, content (base64)}]
      items jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);

  await sql`
    CREATE TABLE emails (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      contact_id uuid REFERENCES contacts (id) ON DELETE SET NULL,
      source text NOT NULL CHECK (source IN ('SEND', 'CAMPAIGN', 'WORKFLOW', 'TEST')),
      type text NOT NULL CHECK (type IN ('TRANSACTIONAL', 'MARKETING', 'HEADLESS')),
      campaign_id uuid,
      template_id uuid REFERENCES templates (id) ON DELETE SET NULL,
      to_email text NOT NULL,
      to_name text,
      from_email text NOT NULL,
      from_name text,
      reply_to text,
      subject text NOT NULL,
      html text NOT NULL,
      text text,
      headers jsonb NOT NULL DEFAULT '{}',
      attachment_set_id uuid REFERENCES attachment_sets (id) ON DELETE SET NULL,
      status text NOT NULL DEFAULT 'PENDING' CHECK (status IN
        ('PENDING', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'BOUNCED', 'COMPLAINED', 'FAILED', 'CANCELLED')),
      -- Chosen before the first attempt and kept on retries: one message, one Message-ID.
      message_id text NOT NULL,
      error text,
      attempts integer NOT NULL DEFAULT 0,
      sent_at timestamptz,
      delivered_at timestamptz,
      opened_at timestamptz,
      clicked_at timestamptz,
      bounced_at timestamptz,
      complained_at timestamptz,
      failed_at timestamptz,
      open_count integer NOT NULL DEFAULT 0,
      click_count integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX emails_project_created_idx ON emails (project_id, created_at, id)`.execute(db);
  await sql`CREATE INDEX emails_contact_idx ON emails (contact_id, created_at)`.execute(db);
  await sql`CREATE UNIQUE INDEX emails_message_id_key ON emails (message_id)`.execute(db);
  // A contact never receives the same campaign twice.
  await sql`CREATE UNIQUE INDEX emails_campaign_contact_key ON emails (campaign_id, contact_id) WHERE campaign_id IS NOT NULL`.execute(db);
  await sql`CREATE INDEX emails_campaign_status_idx ON emails (campaign_id, status) WHERE campaign_id IS NOT NULL`.execute(db);

  await sql`
    CREATE TABLE outbox (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      email_id uuid NOT NULL UNIQUE REFERENCES emails (id) ON DELETE CASCADE,
      message_id text NOT NULL,
      envelope_from text NOT NULL,
      envelope_to text NOT NULL,
      raw bytea NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX outbox_project_created_idx ON outbox (project_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE outbox, emails, attachment_sets, templates, domains`.execute(db);
  await sql`ALTER TABLE projects DROP COLUMN disabled_reason, DROP COLUMN disabled_at`.execute(db);
}
