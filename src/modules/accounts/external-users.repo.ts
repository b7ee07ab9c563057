import { type Kysely, sql } from 'kysely';
import type { Database, UserRow } from '../../db/schema.js';

/**
 * Creates a user who signs in through a provider (OAuth) and has no password, unless the
 * email is taken (then undefined, nothing written). `emailVerified` marks the address
 * verified now. The first user of an empty instance becomes its admin.
 */
export async function insertUserWithoutPassword(
  db: Kysely<Database>,
  input: { email: string; emailVerified: boolean },
): Promise<UserRow | undefined> {
  return db
    .insertInto('users')
    .values({
      email: input.email.toLowerCase(),
      password_hash: null,
      email_verified_at: input.emailVerified ? sql<Date>`now()` : null,
      is_admin: sql<boolean>`NOT EXISTS (SELECT 1 FROM users)`,
    })
    .onConflict((oc) => oc.column('email').doNothing())
    .returningAll()
    .executeTakeFirst();
}
