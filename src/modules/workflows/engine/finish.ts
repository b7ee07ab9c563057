import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { deleteSingleStepJobs } from './jobs.js';

/** Step executions FAILED with their error (and output), their executions FAILED with it. */
export async function failSteps(
  trx: Transaction<Database>,
  projectId: string,
  failed: readonly { id: string; executionId: string; error: string; output?: unknown }[],
): Promise<void> {
  if (failed.length === 0) return;
  await sql`
    WITH f AS (
      SELECT * FROM unnest(${failed.map((f) => f.id)}::uuid[], ${failed.map((f) => f.executionId)}::uuid[],
                           ${failed.map((f) => f.error)}::text[],
                           ${failed.map((f) => (f.output === undefined ? null : JSON.stringify(f.output)))}::jsonb[]) AS f(id, execution_id, error, output)
    ),
    se AS (
      UPDATE workflow_step_executions se SET status = 'FAILED', error = f.error, output = coalesce(f.output, se.output),
        started_at = coalesce(se.started_at, now()), completed_at = now()
      FROM f WHERE se.project_id = ${projectId}::uuid AND se.id = f.id
    )
    UPDATE workflow_executions x SET status = 'FAILED', error = f.error, completed_at = now(), updated_at = now(),
      wait_event = NULL, wait_since = NULL
    FROM f WHERE x.project_id = ${projectId}::uuid AND x.id = f.execution_id`.execute(trx);
}

/** EXIT steps: the step execution COMPLETED, its execution EXITED with the reason. */
export async function exitExecutions(
  trx: Transaction<Database>,
  projectId: string,
  exited: readonly { id: string; executionId: string; reason: string | null }[],
): Promise<void> {
  if (exited.length === 0) return;
  await sql`
    WITH f AS (
      SELECT * FROM unnest(${exited.map((f) => f.id)}::uuid[], ${exited.map((f) => f.executionId)}::uuid[],
                           ${exited.map((f) => f.reason)}::text[]) AS f(id, execution_id, reason)
    ),
    se AS (
      UPDATE workflow_step_executions se SET status = 'COMPLETED', output = jsonb_build_object('reason', f.reason),
        started_at = coalesce(se.started_at, now()), completed_at = now()
      FROM f WHERE se.project_id = ${projectId}::uuid AND se.id = f.id
    )
    UPDATE workflow_executions x SET status = 'EXITED', exit_reason = f.reason, completed_at = now(), updated_at = now()
    FROM f WHERE x.project_id = ${projectId}::uuid AND x.id = f.execution_id`.execute(trx);
}

/**
 * Cancels active executions: CANCELLED, and their unfinished step executions SKIPPED, so any job
 * still queued for them finds nothing to do (a job of one step execution is deleted too).
 * Returns the cancelled ids.
 */
export async function cancelLockedExecutions(trx: Transaction<Database>, projectId: string, executionIds: readonly string[], reason?: string): Promise<string[]> {
  if (executionIds.length === 0) return [];
  const { rows } = await sql<{ id: string; kind: 'x' | 'se' }>`
    WITH x AS (
      UPDATE workflow_executions x SET status = 'CANCELLED', completed_at = now(), updated_at = now(),
        wait_event = NULL, wait_since = NULL, error = coalesce(${reason ?? null}::text, x.error)
      WHERE x.project_id = ${projectId}::uuid AND x.id = ANY(${executionIds}::uuid[]) AND x.status IN ('RUNNING', 'WAITING')
      RETURNING x.id
    ),
    se AS (
      UPDATE workflow_step_executions se SET status = 'SKIPPED', completed_at = now()
      FROM x WHERE se.project_id = ${projectId}::uuid AND se.execution_id = x.id AND se.status IN ('PENDING', 'WAITING', 'RUNNING')
      RETURNING se.id
    )
    SELECT id, 'x' AS kind FROM x UNION ALL SELECT id, 'se' FROM se`.execute(trx);
  await deleteSingleStepJobs(trx, rows.filter((r) => r.kind === 'se').map((r) => r.id));
  return rows.filter((r) => r.kind === 'x').map((r) => r.id);
}
