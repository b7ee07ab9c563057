import { sql, type Transaction } from 'kysely';
import type { Database, WorkflowStepType } from '../../../db/schema.js';
import type { JobDeps } from '../../../jobs/deps.js';
import { applyResults } from './apply.js';
import { errorMessage, isRetryable } from './errors.js';
import { cancelLockedExecutions, failSteps } from './finish.js';
import { handlers } from './steps/index.js';
import { type PendingWebhook, runWebhooks, startWebhooks } from './steps/webhook.js';
import type { StepContext, StepResults, StepRow } from './types.js';

interface ClaimRow {
  id: string;
  execution_id: string;
  workflow_id: string;
  step_id: string;
  status: string;
  due_at: Date | null;
  attempts: number;
  type: WorkflowStepType;
  config: unknown;
  x_status: string;
  current_step_id: string | null;
  contact_id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  event: Record<string, unknown>;
  context: Record<string, unknown>;
  started_at: Date;
  disabled: boolean;
}

/**
 * The claim: locks the executions of these step executions (in id order: every path that changes
 * an execution or its step executions locks the execution row first), then reads them again.
 * Returns the rows still to act on, and the active executions of a disabled project.
 */
async function claim(trx: Transaction<Database>, projectId: string, ids: readonly string[]) {
  await sql`
    SELECT x.id FROM workflow_executions x
    WHERE x.project_id = ${projectId}::uuid
      AND x.id IN (SELECT se.execution_id FROM workflow_step_executions se WHERE se.project_id = ${projectId}::uuid AND se.id = ANY(${ids}::uuid[]))
    ORDER BY x.id FOR UPDATE`.execute(trx);
  const { rows } = await sql<ClaimRow>`
    SELECT se.id, se.execution_id, se.workflow_id, se.step_id, se.status, se.due_at, se.attempts, s.type, s.config,
           x.status AS x_status, x.current_step_id, x.contact_id, x.event, x.context, x.started_at,
           c.email, c.subscribed, c.data, p.disabled
    FROM workflow_step_executions se
    JOIN workflow_executions x ON x.project_id = se.project_id AND x.id = se.execution_id
    JOIN workflow_steps s ON s.project_id = se.project_id AND s.id = se.step_id
    JOIN contacts c ON c.id = x.contact_id
    JOIN projects p ON p.id = se.project_id
    WHERE se.project_id = ${projectId}::uuid AND se.id = ANY(${ids}::uuid[])
    ORDER BY se.id`.execute(trx);
  const live = rows.filter(
    (r) =>
      r.current_step_id === r.step_id &&
      ((r.status === 'PENDING' && r.x_status === 'RUNNING') ||
        (r.status === 'WAITING' && r.x_status === 'WAITING') ||
        (r.status === 'RUNNING' && r.x_status === 'RUNNING' && r.type === 'WEBHOOK')),
  );
  const disabled = live.filter((r) => r.disabled).map((r) => r.execution_id);
  const actionable: StepRow[] = live
    .filter((r) => !r.disabled)
    .map((r) => ({
      id: r.id,
      executionId: r.execution_id,
      workflowId: r.workflow_id,
      stepId: r.step_id,
      type: r.type,
      config: r.config,
      status: r.status as StepRow['status'],
      dueAt: r.due_at,
      attempts: r.attempts,
      contactId: r.contact_id,
      email: r.email,
      subscribed: r.subscribed,
      data: r.data,
      event: r.event,
      context: r.context,
      startedAt: r.started_at,
    }));
  return { actionable, disabled };
}

/**
 * Runs one handler in a savepoint: a permanent error (bad stored config, a 422 from the condition
 * compiler, a bug) fails its rows and leaves the rest of the batch going; a transient one (deadlock,
 * lost connection) rethrows so the whole job is retried.
 */
async function runGroup(ctx: StepContext, rows: StepRow[]): Promise<StepResults> {
  const type = rows[0]?.type;
  if (!type) return { done: [], failed: [], exited: [] };
  await sql`SAVEPOINT workflow_step`.execute(ctx.trx);
  try {
    const results = await handlers[type](ctx, rows);
    await sql`RELEASE SAVEPOINT workflow_step`.execute(ctx.trx);
    return results;
  } catch (err) {
    if (isRetryable(err)) throw err;
    await sql`ROLLBACK TO SAVEPOINT workflow_step`.execute(ctx.trx);
    return { done: [], failed: rows.map((row) => ({ row, error: errorMessage(err) })), exited: [] };
  }
}

/**
 * The `workflow-step` job: one transaction claims the step executions and runs them, grouped by
 * step, and commits their state with the next steps' jobs. WEBHOOK steps are marked RUNNING there
 * and called after the commit (no transaction held during HTTP), then recorded.
 */
export async function runStepBatch(deps: JobDeps, projectId: string, ids: readonly string[]): Promise<void> {
  const webhooks: PendingWebhook[] = await deps.db.transaction().execute(async (trx) => {
    // JIT compiling these short set-based statements cost more than running them (measured on enrolment: 756 → 231 ms for 500).
    await sql`SET LOCAL jit = off`.execute(trx);
    const { actionable, disabled } = await claim(trx, projectId, ids);
    await cancelLockedExecutions(trx, projectId, disabled, 'Project disabled');
    const groups = new Map<string, StepRow[]>();
    const hooks: StepRow[] = [];
    for (const row of actionable) {
      if (row.type === 'WEBHOOK') hooks.push(row);
      else groups.set(row.stepId, [...(groups.get(row.stepId) ?? []), row]);
    }
    const ctx: StepContext = { trx, deps, projectId };
    for (const rows of groups.values()) await applyResults(trx, projectId, await runGroup(ctx, rows));
    return startWebhooks(trx, projectId, hooks);
  });
  if (webhooks.length > 0) await runWebhooks(deps, projectId, webhooks);
}

/** After the last attempt of a job failed: its unfinished step executions FAILED, their executions too. */
export async function failStepBatch(deps: JobDeps, projectId: string, ids: readonly string[], err: unknown): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const { actionable } = await claim(trx, projectId, ids);
    await failSteps(trx, projectId, actionable.map((r) => ({ id: r.id, executionId: r.executionId, error: `gave up: ${errorMessage(err)}` })));
  });
}
