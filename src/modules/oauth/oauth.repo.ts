import { type Kysely, sql } from 'kysely';
import type { Database, OAuthProviderName } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { SessionClaims } from '../../http/session.js';

export interface IdentityKey {
  provider: OAuthProviderName;
  providerUserId: string;
}

/**
 * Serialises the sign-ins of one provider account until the transaction ends, so two
 * callbacks racing for a new account create one user, not two attempts at it.
 */
export async function lockProviderAccount(trx: Kysely<Database>, key: IdentityKey): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`oauth:${key.provider}:${key.providerUserId}`}, 0))`.execute(trx);
}

/** The account a provider account signs in to. */
export interface IdentityUser {
  userId: string;
  /** The account's own address and whether it is verified (not the provider's). */
  email: string;
  emailVerified: boolean;
}

/** The user a provider account signs in to, after recording this sign-in (and the provider's current email). */
export async function touchIdentity(trx: Kysely<Database>, key: IdentityKey, email: string): Promise<IdentityUser | undefined> {
  const { rows } = await sql<{ user_id: string; email: string; email_verified: boolean }>`
    UPDATE oauth_identities i SET email = ${email}, last_sign_in_at = now()
    FROM users u
    WHERE u.id = i.user_id AND i.provider = ${key.provider} AND i.provider_user_id = ${key.providerUserId}
    RETURNING i.user_id, u.email, u.email_verified_at IS NOT NULL AS email_verified`.execute(trx);
  const row = rows[0];
  return row && { userId: row.user_id, email: row.email, emailVerified: row.email_verified };
}

/**
 * Links a provider account to a user. `user_has_provider`: the user already linked another
 * account of this provider (unique per user and provider).
 */
export async function insertIdentity(
  trx: Kysely<Database>,
  input: IdentityKey & { userId: string; email: string },
): Promise<'linked' | 'user_has_provider'> {
  try {
    await trx
      .insertInto('oauth_identities')
      .values({ provider: input.provider, provider_user_id: input.providerUserId, user_id: input.userId, email: input.email })
      .execute();
    return 'linked';
  } catch (err) {
    if (isUniqueViolation(err, 'oauth_identities_user_provider_key')) return 'user_has_provider';
    throw err;
  }
}

/** True while the session is live: its user exists, no password reset since, not ended by logout (as in http/auth.ts). */
export async function isSessionLive(db: Kysely<Database>, claims: SessionClaims): Promise<boolean> {
  const row = await db
    .selectFrom('users as u')
    .select('u.id')
    .where('u.id', '=', claims.userId)
    .where(sql<boolean>`u.sessions_valid_after < to_timestamp(${claims.issuedAtMs / 1000})`)
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('ended_sessions as e').select('e.id').where('e.id', '=', claims.sessionId))))
    .executeTakeFirst();
  return row !== undefined;
}

/** The providers linked to a user, oldest first. */
export async function listIdentities(
  db: Kysely<Database>,
  userId: string,
): Promise<{ provider: OAuthProviderName; email: string; created_at: Date; last_sign_in_at: Date }[]> {
  return db
    .selectFrom('oauth_identities')
    .select(['provider', 'email', 'created_at', 'last_sign_in_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .execute();
}

/**
 * Unlinks a provider from a user unless it is their last way to sign in (no password and no
 * other provider). `not_linked` / `last_sign_in_method` say why nothing was deleted. Run it in
 * a transaction: the user's identities are locked first, so two unlinks at once (GitHub and
 * Google of a user without a password) cannot each count the other as the remaining one.
 */
export async function deleteIdentity(
  trx: Kysely<Database>,
  userId: string,
  provider: OAuthProviderName,
): Promise<'unlinked' | 'not_linked' | 'last_sign_in_method'> {
  await sql`SELECT 1 FROM oauth_identities WHERE user_id = ${userId} FOR UPDATE`.execute(trx);
  const { rows } = await sql<{ deleted: boolean; linked: boolean }>`
    WITH target AS (
      SELECT i.provider_user_id,
        EXISTS (SELECT 1 FROM users u WHERE u.id = i.user_id AND u.password_hash IS NOT NULL)
          OR EXISTS (SELECT 1 FROM oauth_identities o WHERE o.user_id = i.user_id AND o.provider <> i.provider) AS has_other
      FROM oauth_identities i
      WHERE i.user_id = ${userId} AND i.provider = ${provider}
    ), deleted AS (
      DELETE FROM oauth_identities d USING target t
      WHERE d.provider = ${provider} AND d.provider_user_id = t.provider_user_id AND t.has_other
      RETURNING 1
    )
    SELECT EXISTS (SELECT 1 FROM deleted) AS deleted, EXISTS (SELECT 1 FROM target) AS linked`.execute(trx);
  const row = rows[0];
  if (row?.deleted) return 'unlinked';
  return row?.linked ? 'last_sign_in_method' : 'not_linked';
}
