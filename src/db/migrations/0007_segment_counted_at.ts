import { type Kysely, sql } from 'kysely';

/**
 * When `member_count` was last counted (refresh, compute, member changes, or a members page
 * that counted live). A members page reuses a count younger than a minute instead of counting
 * again (docs/conditions.md, "Members page total").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE segments ADD COLUMN counted_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE segments DROP COLUMN counted_at`.execute(db);
}
