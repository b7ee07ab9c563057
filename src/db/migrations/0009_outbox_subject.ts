import { type Kysely, sql } from 'kysely';

/**
 * The subject a captured message was sent with. Campaign email rows hold the campaign's subject
 * template (rendered per recipient at delivery), so the outbox listing reads the rendered one
 * from here (rows captured before this migration fall back to the email's subject).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE outbox ADD COLUMN subject text`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE outbox DROP COLUMN subject`.execute(db);
}
