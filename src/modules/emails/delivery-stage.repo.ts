import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { compiledStatement } from './compiled-statement.js';

/**
 * The end-of-data stage of an SMTP attempt (docs/sending.md "Exactly once"): committed right
 * before the message's final dot, so an email found SENDING tells whether the relay can have it.
 */

/**
 * Records that each email's attempt is about to write its final dot, in one statement. Answers
 * the attempts recorded, as {@link stageKey}s; an attempt absent from it is no longer the
 * email's SENDING one (another run took the email over): its dot must then not go out.
 */
export async function markEndOfData(db: Kysely<Database>, stages: readonly { emailId: string; attempt: number }[]): Promise<Set<string>> {
  const { rows } = await db.executeQuery(markEndOfDataStatement(db, stages.map((s) => s.emailId), stages.map((s) => s.attempt)));
  return new Set(rows.map((r) => stageKey(r.id, r.attempts)));
}

/** One attempt of one email, as markEndOfData answers it. */
export const stageKey = (emailId: string, attempt: number): string => `${emailId}:${attempt}`;

// Compiled once (compiled-statement.ts): it runs at every batch of deliveries.
const markEndOfDataStatement = compiledStatement(
  (db, ids: readonly string[], attempts: readonly number[]) => sql<{ id: string; attempts: number }>`
    UPDATE emails e SET end_of_data_at = now()
    FROM unnest(${ids}::uuid[], ${attempts}::int[]) AS t(id, attempt)
    WHERE e.id = t.id AND e.status = 'SENDING' AND e.attempts = t.attempt
    RETURNING e.id, e.attempts`.compile(db),
  2,
);

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
