import { type Kysely, sql } from 'kysely';

/**
 * Why a campaign is in its state: a machine-readable code and a sentence (docs/campaigns.md),
 * set when it becomes CANCELLED (by POST /cancel, or by the service when its send job cannot
 * proceed). Campaigns cancelled before this migration were cancelled by a caller.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE campaigns ADD COLUMN status_reason text, ADD COLUMN status_message text`.execute(db);
  await sql`
    UPDATE campaigns SET status_reason = 'CANCELLED_BY_USER', status_message = 'Cancelled with POST /campaigns/:id/cancel'
    WHERE status = 'CANCELLED'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE campaigns DROP COLUMN status_reason, DROP COLUMN status_message`.execute(db);
}
