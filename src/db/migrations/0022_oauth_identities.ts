import { type Kysely, sql } from 'kysely';

/**
 * OAuth sign-in identities (docs/accounts.md "Sign-in with GitHub or Google").
 *
 * One row per provider account linked to a user: unique per (provider, provider user id), so
 * a provider account signs in to exactly one user, and per (user, provider), so a user links
 * at most one account of each provider. `email` is the provider's primary email at the last
 * sign-in (informational: the account's own address is users.email).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE oauth_identities (
      provider text NOT NULL CHECK (provider IN ('github', 'google')),
      provider_user_id text NOT NULL,
      user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      email text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_sign_in_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (provider, provider_user_id),
      CONSTRAINT oauth_identities_user_provider_key UNIQUE (user_id, provider)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE oauth_identities`.execute(db);
}
