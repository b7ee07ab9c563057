import { type Kysely, sql } from 'kysely';

/** Accounts, projects with their key pair, memberships, idempotency keys. */
export async function up(db: Kysely<unknown>): Promise<void> {
  // Time-ordered UUIDs (v7) for index locality, usable as column defaults on PostgreSQL 16+.
  await sql`
    CREATE OR REPLACE FUNCTION uuid_generate_v7() RETURNS uuid AS $$
      SELECT encode(
        set_bit(set_bit(
          overlay(uuid_send(gen_random_uuid())
            PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
            FROM 1 FOR 6),
        52, 1), 53, 1),
      'hex')::uuid
    $$ LANGUAGE sql VOLATILE PARALLEL SAFE`.execute(db);

  await sql`
    CREATE TABLE users (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      email text NOT NULL CHECK (email = lower(email)),
      password_hash text,
      is_admin boolean NOT NULL DEFAULT false,
      email_verified_at timestamptz,
      -- Sessions issued before this instant are refused (set on password reset).
      sessions_valid_after timestamptz NOT NULL DEFAULT '-infinity',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX users_email_key ON users (email)`.execute(db);

  await sql`
    CREATE TABLE projects (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      name text NOT NULL,
      public_key text NOT NULL,
      secret_key text NOT NULL,
      disabled boolean NOT NULL DEFAULT false,
      tracking text NOT NULL DEFAULT 'ENABLED' CHECK (tracking IN ('ENABLED', 'DISABLED', 'MARKETING_ONLY')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX projects_public_key_key ON projects (public_key)`.execute(db);
  await sql`CREATE UNIQUE INDEX projects_secret_key_key ON projects (secret_key)`.execute(db);

  await sql`
    CREATE TABLE memberships (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, user_id)
    )`.execute(db);
  await sql`CREATE INDEX memberships_user_id_idx ON memberships (user_id)`.execute(db);

  await sql`
    CREATE TABLE idempotency_keys (
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      key text NOT NULL,
      method text NOT NULL,
      path text NOT NULL,
      status_code integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, key)
    )`.execute(db);
  await sql`CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE idempotency_keys, memberships, projects, users`.execute(db);
  await sql`DROP FUNCTION uuid_generate_v7()`.execute(db);
}
