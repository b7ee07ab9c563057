import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * The end-of-data stage of an SMTP attempt (docs/sending.md "Exactly once"): committed right
 * before the message's final dot, so an email found SENDING tells whether the relay can have it.
 */

/**
 * Records that attempt `attempt` is about to write its final dot. False when the email is no
 * longer SENDING in that attempt (another run took it over): the dot must then not go out.
 */
export async function markEndOfData(db: Kysely<Database>, emailId: string, attempt: number): Promise<boolean> {
  const row = await db
    .updateTable('emails')
    .set({ end_of_data_at: sql`now()` })
    .where('id', '=', emailId)
    .where('status', '=', 'SENDING')
    .where('attempts', '=', attempt)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * SENDING without the end-of-data stage → PENDING with `note`: the interrupted attempt never
 * wrote its final dot, so the relay cannot have accepted it and sending it again cannot
 * duplicate it. False when the email changed meanwhile (`attempt` is the one read).
 */
export async function restartInterrupted(db: Kysely<Database>, emailId: string, attempt: number, note: string): Promise<boolean> {
  const row = await db
    .updateTable('emails')
    .set({ status: 'PENDING', error: note, updated_at: sql`now()` })
    .where('id', '=', emailId)
    .where('status', '=', 'SENDING')
    .where('attempts', '=', attempt)
    .where('end_of_data_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}
