import { type Kysely, sql } from 'kysely';
import type { Database, UserRow } from '../../db/schema.js';
import { conflict } from '../../http/errors.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { User } from './accounts.schema.js';

export function rowToUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    isAdmin: row.is_admin,
    emailVerified: row.email_verified_at !== null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export async function findUserByEmail(db: Kysely<Database>, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email.toLowerCase()).executeTakeFirst();
}

export async function findUserById(db: Kysely<Database>, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Inserts a user (the operator CLI): verified, since an operator created it; the first user of
 * an empty instance becomes its admin. 409 on a taken email.
 */
export async function insertUser(
  db: Kysely<Database>,
  input: { email: string; passwordHash: string; isAdmin?: boolean },
): Promise<UserRow> {
  try {
    return await db
      .insertInto('users')
      .values({
        email: input.email.toLowerCase(),
        password_hash: input.passwordHash,
        is_admin: input.isAdmin ?? sql<boolean>`NOT EXISTS (SELECT 1 FROM users)`,
        email_verified_at: sql<Date>`now()`,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict('An account with this email already exists');
    throw err;
  }
}

/**
 * Inserts a user unless the email is taken (then undefined, nothing written); the first user
 * of an empty instance becomes its admin and is verified, as is everyone when `verified`.
 */
export async function insertUserUnlessTaken(
  db: Kysely<Database>,
  input: { email: string; passwordHash: string; verified: boolean },
): Promise<UserRow | undefined> {
  return db
    .insertInto('users')
    .values({
      email: input.email.toLowerCase(),
      password_hash: input.passwordHash,
      is_admin: sql<boolean>`NOT EXISTS (SELECT 1 FROM users)`,
      email_verified_at: input.verified ? sql<Date>`now()` : sql<Date | null>`CASE WHEN NOT EXISTS (SELECT 1 FROM users) THEN now() END`,
    })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Ends one session (its token's `jti`) until the token expires; drops entries past their expiry. */
export async function endSession(db: Kysely<Database>, sessionId: string, expiresAt: Date): Promise<void> {
  await sql`
    WITH purge AS (DELETE FROM ended_sessions WHERE expires_at < now())
    INSERT INTO ended_sessions (id, expires_at) VALUES (${sessionId}, ${expiresAt})
    ON CONFLICT (id) DO NOTHING`.execute(db);
}

/** Sets a new password and ends every session issued before it. */
export async function updatePasswordHash(db: Kysely<Database>, userId: string, passwordHash: string): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ password_hash: passwordHash, sessions_valid_after: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', userId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
