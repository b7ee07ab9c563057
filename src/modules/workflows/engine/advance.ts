import { sql, type Transaction } from 'kysely';
import type { Database, WorkflowBranch } from '../../../db/schema.js';
import { enqueueStepJobs } from './jobs.js';

/** A step execution that has just finished with `branch` (null: a step without branches). */
export interface Finished {
  executionId: string;
  /** The finished step; null when there is none to continue from (the execution completes). */
  stepId: string | null;
  branch: WorkflowBranch | null;
}

/**
 * Moves executions past finished steps, set-based: each gets its next step execution (PENDING,
 * with its job) along the transition of the taken branch, or is COMPLETED when there is none.
 * Branch rules: no branch → the branch-less edge; yes/no and timeout → that edge only; event →
 * the `event` edge, else a branch-less one. The caller holds the executions' row locks; the
 * next steps' jobs commit with it.
 */
export async function advance(trx: Transaction<Database>, projectId: string, finished: readonly Finished[]): Promise<void> {
  if (finished.length === 0) return;
  const { rows } = await sql<{ id: string; step_id: string }>`
    WITH d AS (
      SELECT * FROM unnest(${finished.map((f) => f.executionId)}::uuid[], ${finished.map((f) => f.stepId)}::uuid[],
                           ${finished.map((f) => f.branch)}::text[]) AS d(execution_id, step_id, branch)
    ),
    nxt AS (
      SELECT d.execution_id, t.to_step_id
      FROM d LEFT JOIN LATERAL (
        SELECT t.to_step_id FROM workflow_transitions t
        WHERE t.project_id = ${projectId}::uuid AND t.from_step_id = d.step_id
          AND (t.branch IS NOT DISTINCT FROM d.branch OR (d.branch = 'event' AND t.branch IS NULL))
        ORDER BY t.branch NULLS LAST LIMIT 1
      ) t ON true
    ),
    moved AS (
      UPDATE workflow_executions x SET
        status = CASE WHEN n.to_step_id IS NULL THEN 'COMPLETED' ELSE 'RUNNING' END,
        current_step_id = coalesce(n.to_step_id, x.current_step_id),
        completed_at = CASE WHEN n.to_step_id IS NULL THEN now() END,
        wait_event = NULL, wait_since = NULL, updated_at = now()
      FROM nxt n
      WHERE x.project_id = ${projectId}::uuid AND x.id = n.execution_id
      RETURNING x.id, x.workflow_id, n.to_step_id
    )
    INSERT INTO workflow_step_executions (project_id, execution_id, workflow_id, step_id)
    SELECT ${projectId}::uuid, m.id, m.workflow_id, m.to_step_id FROM moved m WHERE m.to_step_id IS NOT NULL
    ON CONFLICT DO NOTHING
    RETURNING id, step_id`.execute(trx);
  await enqueueStepJobs(trx, projectId, rows.map((r) => ({ id: r.id, stepId: r.step_id })));
}

/** Marks step executions COMPLETED with their branch and output (one statement). */
export async function completeStepExecutions(
  trx: Transaction<Database>,
  projectId: string,
  done: readonly { id: string; branch: WorkflowBranch | null; output: unknown }[],
): Promise<void> {
  if (done.length === 0) return;
  await sql`
    UPDATE workflow_step_executions se SET
      status = 'COMPLETED', branch = d.branch, output = d.output, error = NULL,
      started_at = coalesce(se.started_at, now()), completed_at = now()
    FROM unnest(${done.map((d) => d.id)}::uuid[], ${done.map((d) => d.branch)}::text[],
                ${done.map((d) => (d.output === undefined ? null : JSON.stringify(d.output)))}::jsonb[]) AS d(id, branch, output)
    WHERE se.project_id = ${projectId}::uuid AND se.id = d.id`.execute(trx);
}
