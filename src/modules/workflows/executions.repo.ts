import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, ExecutionStatus, StepExecutionStatus, WorkflowBranch, WorkflowStepType } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import type { WorkflowExecution, WorkflowStepExecution } from './executions.schema.js';

interface ExecutionRow {
  id: string;
  workflow_id: string;
  contact_id: string;
  email: string;
  status: ExecutionStatus;
  current_step_id: string | null;
  context: Record<string, unknown>;
  event: Record<string, unknown>;
  error: string | null;
  exit_reason: string | null;
  started_at: Date;
  completed_at: Date | null;
  updated_at: Date;
}

const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export function rowToExecution(r: ExecutionRow): WorkflowExecution {
  return {
    id: r.id,
    workflowId: r.workflow_id,
    contactId: r.contact_id,
    contact: { id: r.contact_id, email: r.email },
    status: r.status,
    currentStepId: r.current_step_id,
    context: r.context,
    event: r.event,
    error: r.error,
    exitReason: r.exit_reason,
    startedAt: r.started_at.toISOString(),
    completedAt: iso(r.completed_at),
    updatedAt: r.updated_at.toISOString(),
  };
}

const EXECUTION_COLUMNS = sql`x.id, x.workflow_id, x.contact_id, c.email, x.status, x.current_step_id, x.context, x.event, x.error,
  x.exit_reason, x.started_at, x.completed_at, x.updated_at`;

/** The workflow of the project (undefined for another project's or a malformed id). */
export async function findWorkflowForExecutions(db: Kysely<Database>, projectId: string, workflowId: string) {
  if (!isUuid(workflowId)) return undefined;
  return db
    .selectFrom('workflows')
    .select(['id', 'enabled', 'allow_reentry'])
    .where('project_id', '=', projectId)
    .where('id', '=', workflowId)
    .executeTakeFirst();
}

export async function findContactForExecution(db: Kysely<Database>, projectId: string, by: { id?: string; email?: string }) {
  if (by.id !== undefined && !isUuid(by.id)) return undefined;
  let q = db.selectFrom('contacts').select(['id', 'email']).where('project_id', '=', projectId);
  q = by.id !== undefined ? q.where('id', '=', by.id) : q.where('email', '=', (by.email ?? '').trim().toLowerCase());
  return q.executeTakeFirst();
}

/** Has this contact an execution of the workflow (`active`: a RUNNING or WAITING one)? */
export async function hasExecution(trx: Transaction<Database>, projectId: string, workflowId: string, contactId: string, active: boolean): Promise<boolean> {
  let q = trx
    .selectFrom('workflow_executions')
    .select('id')
    .where('project_id', '=', projectId)
    .where('workflow_id', '=', workflowId)
    .where('contact_id', '=', contactId);
  if (active) q = q.where('status', 'in', ['RUNNING', 'WAITING']);
  return (await q.limit(1).executeTakeFirst()) !== undefined;
}

export async function insertManualExecution(
  trx: Transaction<Database>,
  projectId: string,
  values: { workflowId: string; contactId: string; context: Record<string, unknown> },
): Promise<string> {
  const row = await trx
    .insertInto('workflow_executions')
    .values({ project_id: projectId, workflow_id: values.workflowId, contact_id: values.contactId, context: JSON.stringify(values.context) })
    .returning('id')
    .executeTakeFirstOrThrow();
  // The re-entry record enrolment by events reads (migration 0019).
  await trx
    .insertInto('workflow_enrolments')
    .values({ project_id: projectId, workflow_id: values.workflowId, contact_id: values.contactId })
    .onConflict((oc) => oc.doNothing())
    .execute();
  return row.id;
}

export async function findExecution(db: Kysely<Database>, projectId: string, workflowId: string, executionId: string): Promise<WorkflowExecution | undefined> {
  if (!isUuid(executionId) || !isUuid(workflowId)) return undefined;
  const { rows } = await sql<ExecutionRow>`
    SELECT ${EXECUTION_COLUMNS} FROM workflow_executions x JOIN contacts c ON c.id = x.contact_id
    WHERE x.project_id = ${projectId}::uuid AND x.workflow_id = ${workflowId}::uuid AND x.id = ${executionId}::uuid`.execute(db);
  return rows[0] && rowToExecution(rows[0]);
}

export async function listExecutionPage(
  db: Kysely<Database>,
  projectId: string,
  workflowId: string,
  opts: { status?: ExecutionStatus; limit: number; offset: number },
): Promise<{ rows: WorkflowExecution[]; total: number }> {
  const status = opts.status === undefined ? sql`` : sql`AND x.status = ${opts.status}`;
  const [page, count] = await Promise.all([
    sql<ExecutionRow>`
      SELECT ${EXECUTION_COLUMNS} FROM workflow_executions x JOIN contacts c ON c.id = x.contact_id
      WHERE x.project_id = ${projectId}::uuid AND x.workflow_id = ${workflowId}::uuid ${status}
      ORDER BY x.started_at DESC, x.id DESC LIMIT ${opts.limit} OFFSET ${opts.offset}`.execute(db),
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM workflow_executions x
      WHERE x.project_id = ${projectId}::uuid AND x.workflow_id = ${workflowId}::uuid ${status}`.execute(db),
  ]);
  return { rows: page.rows.map(rowToExecution), total: count.rows[0]?.n ?? 0 };
}

export async function listStepExecutions(db: Kysely<Database>, projectId: string, executionId: string): Promise<WorkflowStepExecution[]> {
  const { rows } = await sql<{
    id: string;
    step_id: string;
    type: WorkflowStepType;
    name: string;
    status: StepExecutionStatus;
    branch: WorkflowBranch | null;
    output: Record<string, unknown> | null;
    error: string | null;
    attempts: number;
    due_at: Date | null;
    started_at: Date | null;
    completed_at: Date | null;
  }>`
    SELECT se.id, se.step_id, s.type, s.name, se.status, se.branch, se.output, se.error, se.attempts, se.due_at, se.started_at, se.completed_at
    FROM workflow_step_executions se JOIN workflow_steps s ON s.project_id = se.project_id AND s.id = se.step_id
    WHERE se.project_id = ${projectId}::uuid AND se.execution_id = ${executionId}::uuid
    ORDER BY se.created_at, se.completed_at NULLS LAST, se.id`.execute(db); // TRIGGER and its successor share a transaction (and its created_at); the TRIGGER is the completed one
  return rows.map((r) => ({
    id: r.id,
    stepId: r.step_id,
    stepType: r.type,
    stepName: r.name,
    status: r.status,
    branch: r.branch,
    output: r.output ?? null,
    error: r.error,
    attempts: r.attempts,
    dueAt: iso(r.due_at),
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
  }));
}

/** Locks the execution rows (id order) and answers their statuses. */
export async function lockExecutions(trx: Transaction<Database>, projectId: string, ids: readonly string[]) {
  if (ids.length === 0) return [];
  const { rows } = await sql<{ id: string; status: ExecutionStatus }>`
    SELECT id, status FROM workflow_executions WHERE project_id = ${projectId}::uuid AND id = ANY(${ids}::uuid[])
    ORDER BY id FOR UPDATE`.execute(trx);
  return rows;
}

/** Active executions of a workflow (RUNNING or WAITING): DELETE /workflows/:id refuses while some are. */
export async function countActiveExecutions(db: Kysely<Database>, projectId: string, workflowId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM workflow_executions
    WHERE project_id = ${projectId}::uuid AND workflow_id = ${workflowId}::uuid AND status IN ('RUNNING', 'WAITING')`.execute(db);
  return rows[0]?.n ?? 0;
}
