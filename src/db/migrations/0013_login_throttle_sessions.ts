import { type Kysely, sql } from 'kysely';

/**
 * Per-account sign-in throttle and ended sessions.
 *
 * login_throttles: one row per email (known or not) that has failed to sign in, keyed by a
 * SHA-256 of the normalised address so typed addresses of non-accounts are not kept. The row
 * exists only after a failure: a first-try success reads it and writes nothing.
 *
 * ended_sessions: the `jti` of session tokens ended by logout, until the token would have
 * expired anyway. The session check probes it inside the query it already makes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE login_throttles (
      key bytea PRIMARY KEY,
      failures integer NOT NULL,
      last_failure_at timestamptz NOT NULL,
      locked_until timestamptz
    )`.execute(db);
  // Failures forgotten after a quiet day are purged a few at a time by later failures.
  await sql`CREATE INDEX login_throttles_last_failure_at_idx ON login_throttles (last_failure_at)`.execute(db);
  await sql`
    CREATE TABLE ended_sessions (
      id uuid PRIMARY KEY,
      expires_at timestamptz NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX ended_sessions_expires_at_idx ON ended_sessions (expires_at)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE ended_sessions`.execute(db);
  await sql`DROP TABLE login_throttles`.execute(db);
}
