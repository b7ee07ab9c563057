import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { notFound } from '../../http/errors.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { uncountContactEvents } from '../analytics/index.js';
import { applyBulkAction, type BulkAction } from './bulk.repo.js';
import {
  addJobProgress,
  claimJob,
  createQueuedJob,
  findJobOfProject,
  JobKind,
  lockUnfinishedJob,
  MAX_STORED_ERRORS,
  rowToJobStatus,
  type JobStatusView,
} from './jobs.repo.js';

export type BulkKind = typeof JobKind.bulkSubscribe | typeof JobKind.bulkUnsubscribe | typeof JobKind.bulkDelete;

const ACTIONS: Record<BulkKind, BulkAction> = {
  [JobKind.bulkSubscribe]: 'subscribe',
  [JobKind.bulkUnsubscribe]: 'unsubscribe',
  [JobKind.bulkDelete]: 'delete',
};

const isBulkKind = (kind: string): kind is BulkKind => Object.hasOwn(ACTIONS, kind);

/** Kinds answered by GET /contacts/bulk/:jobId (field deletes are bulk work too). */
export const BULK_STATUS_KINDS = [JobKind.bulkSubscribe, JobKind.bulkUnsubscribe, JobKind.bulkDelete, JobKind.fieldDelete] as const;

const BulkPayload = z.object({ contactIds: z.array(z.uuid()) });

/** Creates the job row and enqueues its task in one transaction; returns the job id. */
export async function queueBulkJob(
  db: Kysely<Database>,
  input: { projectId: string; kind: BulkKind; contactIds: readonly string[] },
): Promise<string> {
  return db.transaction().execute((trx) =>
    createQueuedJob(trx, {
      projectId: input.projectId,
      kind: input.kind,
      task: Tasks.contactsBulk,
      priority: JobPriority.contacts,
      total: input.contactIds.length,
      payload: { contactIds: input.contactIds },
    }),
  );
}

/**
 * The contacts-bulk task: PROCESSING, then the bulk statement and the final counts commit
 * together, so a re-run (crash, retry) either finds the job COMPLETED and does nothing, or
 * finds nothing of the earlier attempt committed.
 */
export async function runBulkJob(db: Kysely<Database>, jobId: string): Promise<void> {
  const claimed = await claimJob(db, jobId);
  if (!claimed) return;
  await db.transaction().execute(async (trx) => {
    const job = await lockUnfinishedJob(trx, jobId);
    if (!job) return;
    if (!isBulkKind(job.kind)) throw new Error(`job ${jobId} has kind ${job.kind}, not a bulk kind`);
    const action = ACTIONS[job.kind];
    const { contactIds } = BulkPayload.parse(job.payload);
    // Their tracked events go with them (ON DELETE CASCADE): out of the analytics counts first.
    if (action === 'delete') await uncountContactEvents(trx, job.project_id, contactIds);
    const { missing } = await applyBulkAction(trx, { projectId: job.project_id, action, contactIds });
    await addJobProgress(trx, jobId, {
      processed: contactIds.length - missing.length,
      failed: missing.length,
      errors: missing.slice(0, MAX_STORED_ERRORS).map((row) => ({ row, message: 'No contact with this id in the project' })),
      status: 'COMPLETED',
    });
  });
}

/** A job of the project among `kinds`, as the status endpoints answer it; 404 otherwise. */
export async function getJobStatus(
  db: Kysely<Database>,
  input: { projectId: string; jobId: string; kinds: readonly JobKind[] },
): Promise<JobStatusView> {
  const row = await findJobOfProject(db, input);
  if (!row) throw notFound('Job');
  return rowToJobStatus(row);
}
