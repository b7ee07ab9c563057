import argon2 from 'argon2';
import type { Kysely } from 'kysely';
import type { Database, UserRow } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { findUserByEmail, insertUser, updatePasswordHash } from './accounts.repo.js';

// Verified against when the email is unknown, so a login takes as long either way.
const DUMMY_HASH = argon2.hash('not-a-real-password-0');

export const hashPassword = (password: string): Promise<string> => argon2.hash(password, { type: argon2.argon2id });

export async function signup(
  db: Kysely<Database>,
  input: { email: string; password: string; signupEnabled: boolean },
): Promise<UserRow> {
  if (!input.signupEnabled) {
    throw new ApiError(403, ErrorCode.FORBIDDEN, 'Signup is disabled on this instance; ask an operator for an account');
  }
  return insertUser(db, { email: input.email, passwordHash: await hashPassword(input.password) });
}

export async function login(db: Kysely<Database>, input: { email: string; password: string }): Promise<UserRow> {
  const user = await findUserByEmail(db, input.email.trim());
  const hash = user?.password_hash ?? (await DUMMY_HASH);
  const ok = await argon2.verify(hash, input.password).catch(() => false);
  if (!user || !user.password_hash || !ok) {
    throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Invalid email or password');
  }
  return user;
}

/** Sets a new password for the user with this email (operator CLI). */
export async function resetPassword(db: Kysely<Database>, email: string, password: string): Promise<UserRow> {
  if (password.length < 8) throw new Error('password must be at least 8 characters');
  const user = await findUserByEmail(db, email);
  if (!user) throw new Error(`no user with email ${email}`);
  await updatePasswordHash(db, user.id, await hashPassword(password));
  return user;
}
