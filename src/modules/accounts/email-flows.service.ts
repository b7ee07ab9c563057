import type { Kysely } from 'kysely';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { queueSystemEmail } from '../emails/index.js';
import { acceptPendingInvitations } from '../members/index.js';
import { passwordResetEmail, verificationEmail } from './account-emails.js';
import { consumeAccountToken, createAccountToken, TOKENS_PER_HOUR, TokenPurpose } from './account-tokens.repo.js';
import { hashPassword } from './accounts.service.js';
import { clearThrottle, throttleKey } from './login-throttle.repo.js';
import { normaliseEmail } from './login-throttle.js';

/**
 * The verify-email and password-reset flows (docs/accounts.md "Account emails"). Tokens are
 * 256-bit random, stored as SHA-256, single-use, 24 hours (verification) or 1 hour (reset), at
 * most 3 of each per account per hour.
 */

export const INVALID_TOKEN = 'INVALID_TOKEN';
const invalidToken = () =>
  new ApiError(400, INVALID_TOKEN, 'This link is invalid, was already used or has expired', { suggestion: 'Ask for a new email and use its link' });

/** Sends the user a verification link in the caller's transaction; false when 3 were sent within the hour. */
export async function sendVerificationEmail(trx: Transaction<Database>, user: { id: string; email: string }, publicUrl: string): Promise<boolean> {
  const token = await createAccountToken(trx, { userId: user.id, purpose: TokenPurpose.verifyEmail, email: user.email });
  if (!token) return false;
  await queueSystemEmail(trx, { to: user.email, ...verificationEmail({ publicUrl, token }) });
  return true;
}

/** POST /auth/request-verification: a new link for the signed-in user; 429 past 3 an hour; nothing to send once verified. */
export async function requestVerification(db: Kysely<Database>, userId: string, publicUrl: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select(['id', 'email', 'email_verified_at']).where('id', '=', userId).executeTakeFirst();
    if (!user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'This account no longer exists; sign in again');
    if (user.email_verified_at) return;
    if (!(await sendVerificationEmail(trx, user, publicUrl))) {
      throw new ApiError(429, ErrorCode.RATE_LIMIT_EXCEEDED, `At most ${TOKENS_PER_HOUR} verification emails are sent per hour`, {
        headers: { 'Retry-After': '3600' },
        suggestion: 'Use the link of an email already sent (check the spam folder), or try again in an hour',
      });
    }
  });
}

/** POST /auth/verify-email: marks the address the token was sent to verified (if it is still the account's). */
export async function verifyEmail(db: Kysely<Database>, token: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const used = await consumeAccountToken(trx, TokenPurpose.verifyEmail, token);
    const updated =
      used &&
      (await trx
        .updateTable('users')
        .set({ email_verified_at: sql`coalesce(email_verified_at, now())`, updated_at: sql`now()` })
        .where('id', '=', used.userId)
        .where('email', '=', used.email)
        .executeTakeFirst());
    // An unknown, used or expired token, or one sent to an address the account no longer has.
    if (!updated || updated.numUpdatedRows === 0n) throw invalidToken();
    // The address is proven now: the projects it was invited to take it in (docs/members.md).
    await acceptPendingInvitations(trx, { userId: used.userId, email: used.email, emailVerified: true });
  });
}

/**
 * POST /auth/request-password-reset answers at once, the same for every address: the lookup and
 * the email happen in this job (`account-password-reset`), so neither the answer nor its timing
 * tells whether the address has an account.
 */
export async function requestPasswordReset(db: Kysely<Database>, email: string): Promise<void> {
  await sql`SELECT graphile_worker.add_job(${Tasks.accountPasswordReset}::text, ${JSON.stringify({ email: normaliseEmail(email) })}::json,
    priority => ${JobPriority.system}::int, max_attempts => 5)`.execute(db);
}

/** The job's work: a reset link for the account with this address, unless none or 3 were sent within the hour. */
export async function sendPasswordReset(db: Kysely<Database>, email: string, publicUrl: string): Promise<'sent' | 'no-account' | 'limited'> {
  return db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select(['id', 'email']).where('email', '=', normaliseEmail(email)).executeTakeFirst();
    if (!user) return 'no-account';
    const token = await createAccountToken(trx, { userId: user.id, purpose: TokenPurpose.passwordReset, email: user.email });
    if (!token) return 'limited';
    await queueSystemEmail(trx, { to: user.email, ...passwordResetEmail({ publicUrl, token }) });
    return 'sent';
  });
}

/**
 * POST /auth/reset-password: the new password, every session of the user ended
 * (`sessions_valid_after`), the address marked verified (the link reached it), the other reset
 * links voided and the sign-in throttle cleared.
 */
export async function resetPasswordWithToken(db: Kysely<Database>, token: string, password: string): Promise<void> {
  const passwordHash = await hashPassword(password);
  const email = await db.transaction().execute(async (trx) => {
    const used = await consumeAccountToken(trx, TokenPurpose.passwordReset, token);
    if (!used) throw invalidToken();
    const user = await trx
      .updateTable('users')
      .set({
        password_hash: passwordHash,
        sessions_valid_after: sql`now()`,
        email_verified_at: sql`coalesce(email_verified_at, now())`,
        updated_at: sql`now()`,
      })
      .where('id', '=', used.userId)
      .where('email', '=', used.email)
      .returning('email')
      .executeTakeFirst();
    if (!user) throw invalidToken();
    await trx
      .updateTable('account_tokens')
      .set({ used_at: sql`now()` })
      .where('user_id', '=', used.userId)
      .where('purpose', '=', TokenPurpose.passwordReset)
      .where('used_at', 'is', null)
      .execute();
    return user.email;
  });
  await clearThrottle(db, throttleKey(email));
}
