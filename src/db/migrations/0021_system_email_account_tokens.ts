import { type Kysely, sql } from 'kysely';

/**
 * The instance's own account email, and the tokens of the verify / password-reset flows
 * (docs/accounts.md "Account emails").
 *
 * System emails are rows of `emails` with source SYSTEM and no project: the same delivery code
 * (exactly once, retries, DKIM, capture outbox) delivers them, and since every project query
 * filters on project_id, they belong to no project's list, stats, analytics or usage. Their
 * `system_kind` says what they are (verify-email, password-reset, invitation, …) and
 * `system_project_id` the project they are about, if any (no foreign key: the record of a
 * notice outlives the project). `text` (already a column) holds their own text part.
 *
 * account_tokens: emailed one-time tokens, stored as SHA-256 only. `email` is the address the
 * token was sent to (a verification proves that address; one sent before an address change
 * proves nothing).
 *
 * Users who existed before verification did are marked verified: they were never asked to
 * verify, and refusing their projects' sending from this release on would break running setups.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE emails ALTER COLUMN project_id DROP NOT NULL`.execute(db);
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_source_check`.execute(db);
  await sql`ALTER TABLE emails ADD CONSTRAINT emails_source_check CHECK (source IN ('SEND', 'CAMPAIGN', 'WORKFLOW', 'TEST', 'SYSTEM')) NOT VALID`.execute(db);
  await sql`ALTER TABLE emails ADD COLUMN system_kind text, ADD COLUMN system_project_id uuid`.execute(db);
  // A project email always has its project; a system email never has one (it is nobody's mail).
  await sql`
    ALTER TABLE emails ADD CONSTRAINT emails_system_check
      CHECK ((source = 'SYSTEM') = (project_id IS NULL) AND (source = 'SYSTEM') = (system_kind IS NOT NULL)) NOT VALID`.execute(db);
  await sql`ALTER TABLE emails VALIDATE CONSTRAINT emails_source_check`.execute(db);
  await sql`ALTER TABLE emails VALIDATE CONSTRAINT emails_system_check`.execute(db);
  await sql`ALTER TABLE outbox ALTER COLUMN project_id DROP NOT NULL`.execute(db);
  // The outbox listing of system mail (the admin CLI's `outbox --system`).
  await sql`CREATE INDEX outbox_system_created_idx ON outbox (created_at) WHERE project_id IS NULL`.execute(db);

  await sql`
    CREATE TABLE account_tokens (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      purpose text NOT NULL CHECK (purpose IN ('verify-email', 'password-reset')),
      token_hash bytea NOT NULL UNIQUE,
      email text NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  // The per-account request count of the last hour (and the purge of old rows, by created_at).
  await sql`CREATE INDEX account_tokens_user_purpose_created_idx ON account_tokens (user_id, purpose, created_at)`.execute(db);
  await sql`CREATE INDEX account_tokens_created_idx ON account_tokens (created_at)`.execute(db);

  await sql`UPDATE users SET email_verified_at = created_at WHERE email_verified_at IS NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE account_tokens`.execute(db);
  await sql`DELETE FROM emails WHERE source = 'SYSTEM'`.execute(db);
  await sql`DROP INDEX outbox_system_created_idx`.execute(db);
  await sql`ALTER TABLE outbox ALTER COLUMN project_id SET NOT NULL`.execute(db);
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_system_check`.execute(db);
  await sql`ALTER TABLE emails DROP COLUMN system_kind, DROP COLUMN system_project_id`.execute(db);
  await sql`ALTER TABLE emails DROP CONSTRAINT emails_source_check`.execute(db);
  await sql`ALTER TABLE emails ADD CONSTRAINT emails_source_check CHECK (source IN ('SEND', 'CAMPAIGN', 'WORKFLOW', 'TEST'))`.execute(db);
  await sql`ALTER TABLE emails ALTER COLUMN project_id SET NOT NULL`.execute(db);
}
