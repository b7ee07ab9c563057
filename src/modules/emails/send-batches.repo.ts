import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';

/**
 * POST /v1/send's delivery batches (docs/sending.md "Delivery batches"): the emails one
 * acceptance batch wrote (one project's requests of a group commit) are delivered by one
 * send-batch job, SEND_BATCH_CONCURRENCY at a time, as a campaign's batch is; an email that fails
 * transiently, or is throttled, gets a send-email job of its own. A job per email cost
 * PostgreSQL ~365 µs per email in job inserts, fetches and completions; ~100 µs now
 * (docs/performance.md "End to end, fourth pass").
 */
export const SEND_BATCH_CONCURRENCY = 16;
/** Attempts of a send-batch job (a run fails only when the database does: each email's own failures are its own). */
export const SEND_BATCH_MAX_ATTEMPTS = 25;

/** Queues the send-batch job of `emailIds` (all of `projectId`), in the transaction that wrote them. */
export async function enqueueSendBatch(trx: Transaction<Database>, projectId: string, emailIds: readonly string[]): Promise<void> {
  if (emailIds.length === 0) return;
  await sql`
    SELECT graphile_worker.add_job(${Tasks.sendBatch}::text, json_build_object('projectId', ${projectId}::uuid, 'emailIds', ${emailIds}::uuid[]),
      priority => ${JobPriority.transactional}::int, max_attempts => ${SEND_BATCH_MAX_ATTEMPTS}::int)`.execute(trx);
}
