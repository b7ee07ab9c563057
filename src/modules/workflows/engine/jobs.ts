import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { JobPriority, Tasks } from '../../../jobs/queue.js';

/** Step executions per `workflow-step` job: one transaction each (see docs/workflows.md "Engine"). */
export const STEP_BATCH = 500;
/** A job that fails this often leaves its step executions as they are (visible, retried by nothing). */
export const STEP_MAX_ATTEMPTS = 25;

/** The job key of a batch: its first step execution's id (a batch re-enqueued replaces itself). */
export const stepJobKey = (firstStepExecutionId: string): string => `workflow-step:${firstStepExecutionId}`;

/**
 * Enqueues `workflow-step` jobs for step executions, grouped by step and due time (a job works on
 * one step's executions set-based) in chunks of {@link STEP_BATCH}, each at its rows' `runAt` (or
 * the default `runAt`; none: now), in the caller's transaction: the rows and their jobs commit
 * together. One statement.
 */
export async function enqueueStepJobs(
  trx: Transaction<Database>,
  projectId: string,
  rows: readonly { id: string; stepId: string; runAt?: Date | null }[],
  runAt?: Date,
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    WITH r AS (
      SELECT id, step_id, run_at,
             (row_number() OVER (PARTITION BY step_id, run_at ORDER BY id) - 1) / ${STEP_BATCH}::int AS chunk
      FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.stepId)}::uuid[],
                  ${rows.map((r) => (r.runAt ?? runAt ?? null)?.toISOString() ?? null)}::timestamptz[]) AS t(id, step_id, run_at)
    )
    SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
      SELECT ROW(${Tasks.workflowStep}::text,
                 json_build_object('projectId', ${projectId}::text, 'ids', array_agg(id ORDER BY id)),
                 NULL::text, run_at, ${STEP_MAX_ATTEMPTS}::int,
                 'workflow-step:' || min(id::text), ${JobPriority.workflowSteps}::int, NULL::text[])::graphile_worker.job_spec
      FROM r GROUP BY step_id, run_at, chunk
    ))`.execute(trx);
}

/**
 * Deletes the not-yet-running jobs of these step executions that carry nothing else (a job of a
 * single step execution, keyed by it). Batches of several executions stay: they find these rows
 * finished and skip them. Cheap: a probe of graphile-worker's unique key index per id.
 */
export async function deleteSingleStepJobs(trx: Transaction<Database>, stepExecutionIds: readonly string[]): Promise<void> {
  if (stepExecutionIds.length === 0) return;
  await sql`
    DELETE FROM graphile_worker._private_jobs j
    WHERE j.key = ANY(${stepExecutionIds.map(stepJobKey)}::text[]) AND j.locked_at IS NULL
      AND json_array_length(j.payload -> 'ids') = 1`.execute(trx);
}
