import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { JobPriority, Tasks } from '../../../jobs/queue.js';
import { cancelLockedExecutions } from './finish.js';

/** Executions cancelled per transaction: a big cancel never holds tens of thousands of row locks at once. */
export const CANCEL_CHUNK = 1_000;

/**
 * Cancels the active executions of a project (or of one of its workflows), in transactions of
 * {@link CANCEL_CHUNK}: each locks the next active executions in id order (the engine's lock
 * order), cancels them and commits. Stops at the first chunk that is not full, so executions
 * enrolled meanwhile may or may not be caught; the count is what was cancelled.
 */
export async function cancelActiveExecutions(
  db: Kysely<Database>,
  projectId: string,
  opts: { workflowId?: string; reason?: string } = {},
): Promise<number> {
  let cancelled = 0;
  for (;;) {
    const { locked, done } = await db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ id: string }>`
        SELECT id FROM workflow_executions
        WHERE project_id = ${projectId}::uuid AND status IN ('RUNNING', 'WAITING')
          ${opts.workflowId ? sql`AND workflow_id = ${opts.workflowId}::uuid` : sql``}
        ORDER BY id LIMIT ${CANCEL_CHUNK} FOR UPDATE`.execute(trx);
      const ids = rows.map((r) => r.id);
      return { locked: ids.length, done: (await cancelLockedExecutions(trx, projectId, ids, opts.reason)).length };
    });
    cancelled += done;
    if (locked < CANCEL_CHUNK) return cancelled;
  }
}

/**
 * Enqueues the cancellation of a disabled project's executions (the `workflow-cancel-project`
 * job), in the transaction that disables it; keyed per project, so disabling twice queues once.
 */
export async function enqueueProjectCancel(trx: Transaction<Database>, projectId: string): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.workflowCancelProject}::text, json_build_object('projectId', ${projectId}::text),
      job_key => ${`${Tasks.workflowCancelProject}:${projectId}`}::text, priority => ${JobPriority.workflowSteps}::int)`.execute(trx);
}

/** The job: cancels every active execution while the project is still disabled (re-enabled first: nothing). */
export async function cancelDisabledProjectExecutions(db: Kysely<Database>, projectId: string): Promise<number> {
  const project = await db.selectFrom('projects').select('disabled').where('id', '=', projectId).executeTakeFirst();
  if (!project?.disabled) return 0;
  return cancelActiveExecutions(db, projectId, { reason: 'Project disabled' });
}
