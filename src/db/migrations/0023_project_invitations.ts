import { type Kysely, sql } from 'kysely';

/**
 * Invitations to a project (docs/members.md). One row per invite request, kept as history:
 * - PENDING: an address without an account was emailed a token link (SHA-256 of the token
 *   stored, never the token); accepted on sign-up/sign-in with that address once it is proven,
 *   or with the token; expires after 7 days; at most one PENDING row per (project, address).
 * - ADDED: the address had an account and joined at once (no token, no email).
 * - ACCEPTED, REVOKED: closed at `closed_at` (a re-invite of a pending address revokes the old row).
 * Every row counts against the per-project and per-inviter invite rates (created_at indexes).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE project_invitations (
      id uuid PRIMARY KEY DEFAULT uuid_generate_v7(),
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      email text NOT NULL CHECK (email = lower(email)),
      role text NOT NULL CHECK (role IN ('OWNER', 'ADMIN', 'MEMBER')),
      status text NOT NULL CHECK (status IN ('PENDING', 'ADDED', 'ACCEPTED', 'REVOKED')),
      token_hash bytea UNIQUE,
      invited_by uuid REFERENCES users (id) ON DELETE SET NULL,
      accepted_by uuid REFERENCES users (id) ON DELETE SET NULL,
      expires_at timestamptz NOT NULL,
      closed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((status = 'PENDING') <= (token_hash IS NOT NULL))
    )`.execute(db);
  await sql`CREATE UNIQUE INDEX project_invitations_pending_key ON project_invitations (project_id, email) WHERE status = 'PENDING'`.execute(db);
  // Acceptance on sign-in: the pending invitations of one address.
  await sql`CREATE INDEX project_invitations_pending_email_idx ON project_invitations (email) WHERE status = 'PENDING'`.execute(db);
  // The invite rates: rows of a project, and of an inviter, created in the last window.
  await sql`CREATE INDEX project_invitations_project_created_idx ON project_invitations (project_id, created_at)`.execute(db);
  await sql`CREATE INDEX project_invitations_inviter_created_idx ON project_invitations (invited_by, created_at)`.execute(db);
  // ON DELETE SET NULL of accepted_by scans by it.
  await sql`CREATE INDEX project_invitations_accepted_by_idx ON project_invitations (accepted_by) WHERE accepted_by IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE project_invitations`.execute(db);
}
