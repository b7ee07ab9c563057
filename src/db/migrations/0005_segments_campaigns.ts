import { type Kysely, sql } from 'kysely';

/**
 * Audience: segments (DYNAMIC by condition, STATIC by hand), their member rows (static
 * members, and the computed membership of tracked dynamic segments), and campaigns.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE segments (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
      description text NOT NULL DEFAULT '' CHECK (length(description) <= 500),
      type text NOT NULL DEFAULT 'DYNAMIC' CHECK (type IN ('DYNAMIC', 'STATIC')),
      condition jsonb,
      track_membership boolean NOT NULL DEFAULT false,
      member_count integer NOT NULL DEFAULT 0,
      computed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (type = 'STATIC' OR condition IS NOT NULL)
    )`.execute(db);
  await sql`CREATE INDEX segments_project_created_idx ON segments (project_id, created_at)`.execute(db);

  await sql`
    CREATE TABLE segment_members (
      segment_id uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
      contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (segment_id, contact_id)
    )`.execute(db);
  await sql`CREATE INDEX segment_members_contact_idx ON segment_members (contact_id)`.execute(db);

  await sql`
    CREATE TABLE campaigns (
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
      status text NOT NULL DEFAULT 'DRAFT' CHECK (status IN ('DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED')),
      audience_type text NOT NULL DEFAULT 'ALL' CHECK (audience_type IN ('ALL', 'SEGMENT', 'FILTERED')),
      audience_condition jsonb,
      segment_id uuid REFERENCES segments (id) ON DELETE RESTRICT,
      scheduled_for timestamptz,
      total_recipients integer NOT NULL DEFAULT 0,
      sent_at timestamptz,
      cancelled_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX campaigns_project_created_idx ON campaigns (project_id, created_at, id)`.execute(db);
  await sql`CREATE INDEX campaigns_due_idx ON campaigns (scheduled_for) WHERE status = 'SCHEDULED'`.execute(db);
  await sql`
    ALTER TABLE emails ADD CONSTRAINT emails_campaign_fk
      FOREIGN KEY (campaign_id) REFERENCES campaigns (id) ON DELETE SET NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_campaign_fk`.execute(db);
  await sql`DROP TABLE campaigns, segment_members, segments`.execute(db);
}
