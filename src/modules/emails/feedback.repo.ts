import { sql, type Transaction } from 'kysely';
import { type Database, SYSTEM_SOURCE } from '../../db/schema.js';

/**
 * What other modules read and note on email rows after sending: the relay's notifications
 * (webhooks) and clicks (tracking). Milestones themselves are recorded by status.ts.
 */

/** A project email as the feedback path (src/modules/bounces) needs it: its recipient (suppressions) and contact. */
export interface FeedbackEmail {
  id: string;
  project_id: string;
  contact_id: string | null;
  to_email: string;
}

/**
 * The project email one of these Message-IDs names (index on message_id; unique by construction).
 * SYSTEM emails (the instance's own) are not found: the relay's notifications about the instance's
 * own account mail change no project's record (docs/accounts.md).
 */
export async function findEmailByMessageIds(trx: Transaction<Database>, messageIds: readonly string[]): Promise<FeedbackEmail | undefined> {
  if (messageIds.length === 0) return undefined;
  const row = await trx
    .selectFrom('emails')
    .select(['id', 'project_id', 'contact_id', 'to_email'])
    .where('message_id', 'in', messageIds)
    .where('source', '<>', SYSTEM_SOURCE)
    .limit(1)
    .executeTakeFirst();
  return row;
}

/** The project emails with these ids (verified VERP return paths name them), by id; SYSTEM emails are not found, as above. */
export async function findEmailsByIds(trx: Transaction<Database>, emailIds: readonly string[]): Promise<Map<string, FeedbackEmail>> {
  if (emailIds.length === 0) return new Map();
  const rows = await trx
    .selectFrom('emails')
    .select(['id', 'project_id', 'contact_id', 'to_email'])
    .where('id', 'in', emailIds)
    .where('source', '<>', SYSTEM_SOURCE)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** Keeps a soft bounce's reason on the email (its status is left alone: see docs/tracking.md). */
export async function noteSoftBounce(trx: Transaction<Database>, emailId: string, note: string): Promise<void> {
  await trx.updateTable('emails').set({ error: note, updated_at: sql`now()` }).where('id', '=', emailId).execute();
}

/**
 * Locks an email row for a click and says whether it was ever opened; undefined when the
 * email is gone. Taking the lock first serialises concurrent clicks of one email, so the
 * implied open is recorded once.
 */
export async function lockEmailForClick(trx: Transaction<Database>, emailId: string): Promise<{ opened: boolean } | undefined> {
  return trx
    .selectFrom('emails')
    .select(sql<boolean>`opened_at IS NOT NULL`.as('opened'))
    .where('id', '=', emailId)
    .forUpdate()
    .executeTakeFirst();
}

