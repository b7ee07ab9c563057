import { createHash } from 'node:crypto';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/** Failures that cost nothing; the next ones lock the account for 1 s, 2 s, 4 s, … */
export const FREE_FAILURES = 5;
/** The longest lock, reached at the 16th failure in a row. */
export const MAX_LOCK_SECONDS = 15 * 60;
/** A day without failures forgets the earlier ones. */
const FORGET_AFTER = sql`interval '24 hours'`;
/** Forgotten rows deleted by each failure: the table holds about a day of failures. */
const PURGE_PER_FAILURE = 10;

/** The row key of an email: its SHA-256, so addresses that are not accounts are never stored. */
export const throttleKey = (normalisedEmail: string): Buffer => createHash('sha256').update(`login:${normalisedEmail}`).digest();

export interface ThrottleState {
  failures: number;
  /** Seconds until the lock ends (database clock, so every API process agrees); null when not locked. */
  retryAfterSeconds: number | null;
}

/** The lock that follows the nth failure in a row (null while failures are free). */
function lockAfter(failures: RawBuilder<number>): RawBuilder<Date | null> {
  // The exponent is capped before power() so a long run of failures cannot overflow the interval.
  return sql`CASE WHEN ${failures} > ${FREE_FAILURES}
    THEN now() + make_interval(secs => least(power(2, least(${failures} - ${FREE_FAILURES + 1}, 20)), ${MAX_LOCK_SECONDS}))
  END`;
}

/** The email's live failures, or undefined when it has none (the common case: one index probe, no write). */
export async function readThrottle(db: Kysely<Database>, key: Buffer): Promise<ThrottleState | undefined> {
  const row = await db
    .selectFrom('login_throttles')
    .select([
      'failures',
      sql<number | null>`CASE WHEN locked_until > now() THEN ceil(extract(epoch FROM locked_until - now()))::int END`.as('retry'),
    ])
    .where('key', '=', key)
    .where('last_failure_at', '>', sql<Date>`now() - ${FORGET_AFTER}`)
    .executeTakeFirst();
  return row && { failures: row.failures, retryAfterSeconds: row.retry };
}

/** Counts one failure (atomically across processes) and sets the lock it earns; purges a few forgotten rows. */
export async function recordFailure(db: Kysely<Database>, key: Buffer): Promise<ThrottleState> {
  const next = sql<number>`CASE WHEN t.last_failure_at < now() - ${FORGET_AFTER} THEN 1 ELSE t.failures + 1 END`;
  const { rows } = await sql<{ failures: number; retry: number | null }>`
    WITH purge AS (
      DELETE FROM login_throttles WHERE key IN (
        SELECT key FROM login_throttles
        WHERE last_failure_at < now() - ${FORGET_AFTER} AND key <> ${key}
        LIMIT ${PURGE_PER_FAILURE}
      )
    )
    INSERT INTO login_throttles AS t (key, failures, last_failure_at, locked_until)
    VALUES (${key}, 1, now(), ${lockAfter(sql`1`)})
    ON CONFLICT (key) DO UPDATE SET failures = ${next}, last_failure_at = now(), locked_until = ${lockAfter(next)}
    RETURNING failures, CASE WHEN locked_until > now() THEN ceil(extract(epoch FROM locked_until - now()))::int END AS retry`.execute(db);
  const row = rows[0];
  if (!row) throw new Error('login throttle upsert returned no row');
  return { failures: row.failures, retryAfterSeconds: row.retry };
}

/** Forgets the email's failures (a successful sign-in, an operator's password reset). */
export async function clearThrottle(db: Kysely<Database>, key: Buffer): Promise<void> {
  await db.deleteFrom('login_throttles').where('key', '=', key).execute();
}
