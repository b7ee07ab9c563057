import { type Kysely, sql } from 'kysely';

/**
 * When the segment's condition last changed (create, PATCH with a condition). A cached member
 * count is valid for the segment only if counted since then; a rename keeps it valid.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE segments ADD COLUMN condition_changed_at timestamptz NOT NULL DEFAULT now()`.execute(db);
  await sql`UPDATE segments SET condition_changed_at = updated_at`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE segments DROP COLUMN condition_changed_at`.execute(db);
}
