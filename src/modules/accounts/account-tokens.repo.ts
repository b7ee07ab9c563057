import { createHash, randomBytes } from 'node:crypto';
import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** What an emailed token is for; each has its own lifetime and its own request count. */
export const TokenPurpose = { verifyEmail: 'verify-email', passwordReset: 'password-reset' } as const;
export type TokenPurpose = (typeof TokenPurpose)[keyof typeof TokenPurpose];

/** How long a token works after it is sent. */
export const TOKEN_TTL_MINUTES: Record<TokenPurpose, number> = { 'verify-email': 24 * 60, 'password-reset': 60 };
/** Tokens one account may be sent per purpose within an hour. */
export const TOKENS_PER_HOUR = 3;

/** SHA-256 of a token: the only form stored, so the table never holds a working link. */
export const hashToken = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/**
 * Creates a token for the user unless they were sent {@link TOKENS_PER_HOUR} of this purpose in
 * the last hour (then undefined, nothing written). A transaction-level advisory lock on the user
 * and purpose serialises concurrent requests, so the count cannot be raced past. Also deletes the
 * account's tokens of this purpose older than a day (used or expired, nothing to keep).
 */
export async function createAccountToken(
  trx: Transaction<Database>,
  input: { userId: string; purpose: TokenPurpose; email: string },
): Promise<string | undefined> {
  await sql`SELECT pg_advisory_xact_lock(hashtext(${`account-token:${input.purpose}:${input.userId}`}))`.execute(trx);
  const { rows } = await sql<{ recent: number }>`
    WITH purge AS (
      DELETE FROM account_tokens
      WHERE user_id = ${input.userId} AND purpose = ${input.purpose} AND created_at < now() - interval '1 day'
    )
    SELECT count(*)::int AS recent FROM account_tokens
    WHERE user_id = ${input.userId} AND purpose = ${input.purpose} AND created_at > now() - interval '1 hour'`.execute(trx);
  if ((rows[0]?.recent ?? 0) >= TOKENS_PER_HOUR) return undefined;
  const token = randomBytes(32).toString('base64url');
  await trx
    .insertInto('account_tokens')
    .values({
      user_id: input.userId,
      purpose: input.purpose,
      token_hash: hashToken(token),
      email: input.email,
      expires_at: sql<Date>`now() + make_interval(mins => ${TOKEN_TTL_MINUTES[input.purpose]})`,
    })
    .execute();
  return token;
}

/**
 * Uses a token once: marks it used and answers its user and address, or undefined when the
 * token is unknown, already used, expired or of another purpose. One statement: two requests
 * with the same token cannot both use it.
 */
export async function consumeAccountToken(
  db: Db,
  purpose: TokenPurpose,
  token: string,
): Promise<{ userId: string; email: string } | undefined> {
  const row = await db
    .updateTable('account_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', hashToken(token))
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning(['user_id', 'email'])
    .executeTakeFirst();
  return row && { userId: row.user_id, email: row.email };
}
