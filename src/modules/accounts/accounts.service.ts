import argon2 from 'argon2';
import type { Kysely } from 'kysely';
import type { Database, UserRow } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { uuidV7 } from '../../lib/uuid.js';
import type { SessionClaims } from '../../http/session.js';
import { endSession, findUserByEmail, insertUserUnlessTaken, rowToUser, updatePasswordHash } from './accounts.repo.js';
import { sendVerificationEmail } from './email-flows.service.js';
import type { User } from './accounts.schema.js';
import { clearThrottle, throttleKey } from './login-throttle.repo.js';
import { type LoginThrottle, normaliseEmail } from './login-throttle.js';

// Verified against when the email is unknown, so a login takes as long either way.
const DUMMY_HASH = argon2.hash('not-a-real-password-0');

export const hashPassword = (password: string): Promise<string> => argon2.hash(password, { type: argon2.argon2id });

export interface SignupResult {
  /** The new user, or undefined when the address already has an account (nothing was changed). */
  created: UserRow | undefined;
  /** The answer's body: the new user, or a look-alike for a taken address (docs/accounts.md). */
  user: User;
}

/**
 * Creates an account. A taken address gets the same 201 and body shape as a new one (a user
 * that does not exist, no session), so signup does not tell who has an account.
 *
 * `verification` (the instance can send mail: SMTP_URL set): the new user starts unverified
 * (unless it is the instance's first) and is emailed a verification link in the same
 * transaction. Without it, users are created verified (docs/accounts.md).
 */
export async function signup(
  db: Kysely<Database>,
  input: { email: string; password: string; signupEnabled: boolean; verification?: { publicUrl: string } },
): Promise<SignupResult> {
  if (!input.signupEnabled) {
    throw new ApiError(403, ErrorCode.FORBIDDEN, 'Signup is disabled on this instance; ask an operator for an account');
  }
  // Hashed either way, so a taken address answers in the same time as a new one.
  const passwordHash = await hashPassword(input.password);
  const { verification } = input;
  const created = await db.transaction().execute(async (trx) => {
    const user = await insertUserUnlessTaken(trx, { email: input.email, passwordHash, verified: !verification });
    if (user && verification && !user.email_verified_at) await sendVerificationEmail(trx, user, verification.publicUrl);
    return user;
  });
  return { created, user: created ? rowToUser(created) : lookAlikeUser(input.email, !verification) };
}

/**
 * What a new, non-admin account's answer looks like, for an address that already has one:
 * `emailVerified` as a new account's would be (verified when the instance cannot send mail).
 */
function lookAlikeUser(email: string, verified: boolean): User {
  const now = new Date().toISOString();
  return { id: uuidV7(), email: normaliseEmail(email), isAdmin: false, emailVerified: verified, createdAt: now, updatedAt: now };
}

/**
 * Checks an email and password, through the per-account throttle: a locked email gets 429
 * before any hashing. Unknown emails are hashed against a dummy and throttled alike.
 */
export async function login(db: Kysely<Database>, throttle: LoginThrottle, input: { email: string; password: string }): Promise<UserRow> {
  const user = await throttle.attempt(input.email, async () => {
    const found = await findUserByEmail(db, normaliseEmail(input.email));
    const hash = found?.password_hash ?? (await DUMMY_HASH);
    const ok = await argon2.verify(hash, input.password).catch(() => false);
    return found?.password_hash && ok ? found : undefined;
  });
  if (!user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Invalid email or password');
  return user;
}

/** Logout: ends this session (if the cookie held a valid one) in every API process at once. */
export async function logout(db: Kysely<Database>, session: SessionClaims | undefined): Promise<void> {
  if (session) await endSession(db, session.sessionId, session.expiresAt);
}

/** Sets a new password for the user with this email (operator CLI). */
export async function resetPassword(db: Kysely<Database>, email: string, password: string): Promise<UserRow> {
  if (password.length < 8) throw new Error('password must be at least 8 characters');
  const user = await findUserByEmail(db, email);
  if (!user) throw new Error(`no user with email ${email}`);
  await updatePasswordHash(db, user.id, await hashPassword(password));
  // The new password works at once, even for an account locked by failed sign-ins.
  await clearThrottle(db, throttleKey(normaliseEmail(email)));
  return user;
}
