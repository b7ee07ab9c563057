import { type Kysely, sql } from 'kysely';

/**
 * The audience store: contacts (unique lower-cased email per project, free-form data), their
 * events, and the status rows of queued bulk jobs and imports.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);

  await sql`
    CREATE TABLE contacts (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      email text NOT NULL CHECK (email = lower(email)),
      subscribed boolean NOT NULL,
      data jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(data) = 'object'),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  // Upserts by email; also the keyset of the email sort.
  await sql`CREATE UNIQUE INDEX contacts_project_email_key ON contacts (project_id, email)`.execute(db);
  // Keyset pagination of the default sort (createdAt, id).
  await sql`CREATE INDEX contacts_project_created_idx ON contacts (project_id, created_at, id)`.execute(db);
  // Case-insensitive substring search on email.
  await sql`CREATE INDEX contacts_email_trgm_idx ON contacts USING gin (email gin_trgm_ops)`.execute(db);
  // Containment and key-existence filters on data (segments, field coverage).
  await sql`CREATE INDEX contacts_data_idx ON contacts USING gin (data jsonb_path_ops)`.execute(db);

  await sql`
    CREATE TABLE events (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      contact_id uuid NOT NULL REFERENCES contacts (id) ON DELETE CASCADE,
      name text NOT NULL,
      data jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX events_project_name_created_idx ON events (project_id, name, created_at)`.execute(db);
  await sql`CREATE INDEX events_contact_created_idx ON events (contact_id, created_at)`.execute(db);
  await sql`CREATE INDEX events_project_created_idx ON events (project_id, created_at)`.execute(db);

  // Every change of subscribed, whatever the path (track, send, contact routes, bulk jobs,
  // imports, workflows), records its event in the same transaction, exactly once.
  await sql`
    CREATE FUNCTION record_subscription_change() RETURNS trigger AS $$
    BEGIN
      INSERT INTO events (project_id, contact_id, name)
      VALUES (NEW.project_id, NEW.id, CASE WHEN NEW.subscribed THEN 'contact.subscribed' ELSE 'contact.unsubscribed' END);
      RETURN NULL;
    END
    $$ LANGUAGE plpgsql`.execute(db);
  await sql`
    CREATE TRIGGER contacts_subscription_change
    AFTER UPDATE OF subscribed ON contacts
    FOR EACH ROW WHEN (OLD.subscribed IS DISTINCT FROM NEW.subscribed)
    EXECUTE FUNCTION record_subscription_change()`.execute(db);

  await sql`
    CREATE TABLE jobs (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      kind text NOT NULL,
      status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
      total integer NOT NULL DEFAULT 0,
      processed integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      errors jsonb NOT NULL DEFAULT '[]',
      payload jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE INDEX jobs_project_created_idx ON jobs (project_id, created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE jobs, events, contacts`.execute(db);
  await sql`DROP FUNCTION record_subscription_change()`.execute(db);
}
