import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';

/**
 * A suspended project's queued mail (src/modules/security): its PENDING emails become CANCELLED
 * by a job, in chunks, while the project stays disabled (delivery would refuse them anyway; this
 * records why at once and frees the queue).
 */

export const PROJECT_DISABLED_CANCEL_NOTE = 'Not sent: the project was disabled';

/** Queues the cancellation of the project's PENDING emails, in the disabling transaction (keyed per project). */
export async function enqueueProjectMailCancel(trx: Transaction<Database>, projectId: string): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.projectMailCancel}::text, json_build_object('projectId', ${projectId}::text),
      job_key => ${`${Tasks.projectMailCancel}:${projectId}`}::text, priority => ${JobPriority.transactional}::int)`.execute(trx);
}

/**
 * Cancels up to `limit` PENDING emails of the project if it is still disabled (re-enabled:
 * nothing), in one statement through emails_project_pending_idx (migration 0025). Rows a
 * delivery holds are skipped (it sees the disabled project itself). Returns how many.
 */
export async function cancelPendingEmailsOfDisabledProject(db: Kysely<Database>, projectId: string, limit: number): Promise<number> {
  const { rows } = await sql<{ cancelled: number }>`
    WITH picked AS (
      SELECT e.id FROM emails e
      WHERE e.project_id = ${projectId} AND e.status = 'PENDING'
        AND EXISTS (SELECT 1 FROM projects p WHERE p.id = ${projectId} AND p.disabled)
      LIMIT ${limit}
      FOR UPDATE OF e SKIP LOCKED
    ),
    cancelled AS (
      UPDATE emails e SET status = 'CANCELLED', error = ${PROJECT_DISABLED_CANCEL_NOTE}, updated_at = now()
      FROM picked WHERE e.id = picked.id AND e.status = 'PENDING'
      RETURNING 1
    )
    SELECT count(*)::int AS cancelled FROM cancelled`.execute(db);
  return rows[0]?.cancelled ?? 0;
}

/**
 * Emails waiting for delivery (PENDING), every project and the instance's own: GET /metrics'
 * `mailplatform_emails_pending`. Counted along emails_project_pending_idx (migration 0025): its
 * cost follows the backlog, not the table (the scrape bounds it with a statement timeout).
 */
export async function countPendingEmails(db: Kysely<Database> | Transaction<Database>): Promise<number> {
  const { rows } = await sql<{ pending: number }>`SELECT count(*)::bigint AS pending FROM emails WHERE status = 'PENDING'`.execute(db);
  return rows[0]?.pending ?? 0;
}
