import type { Kysely } from 'kysely';
import { type Database, EXECUTION_STATUSES, type ExecutionStatus } from '../../db/schema.js';
import { ApiError, conflict, ErrorCode, notFound } from '../../lib/errors.js';
import { cancelActiveExecutions } from './engine/cancel.js';
import { cancelLockedExecutions } from './engine/finish.js';
import { lockEnrolment, startExecutions } from './engine/start.js';
import {
  findContactForExecution,
  findExecution,
  findWorkflowForExecutions,
  hasExecution,
  insertManualExecution,
  listExecutionPage,
  listStepExecutions,
  lockExecutions,
} from './executions.repo.js';
import type { ListExecutionsQuery, StartExecutionBody, WorkflowExecution, WorkflowExecutionDetail, WorkflowExecutionList } from './executions.schema.js';

async function workflowOr404(db: Kysely<Database>, projectId: string, workflowId: string) {
  const workflow = await findWorkflowForExecutions(db, projectId, workflowId);
  if (!workflow) throw notFound('Workflow');
  return workflow;
}

/**
 * POST /workflows/:id/executions: starts the workflow for a contact (by id or address; unknown:
 * 404), with `context`. The workflow must be enabled (400); an active execution of the contact,
 * or any earlier one when re-entry is off, is a 409. Serialised with enrolment by events, so the
 * re-entry rules hold between the two.
 */
export async function startExecution(db: Kysely<Database>, projectId: string, workflowId: string, body: StartExecutionBody): Promise<WorkflowExecution> {
  const workflow = await workflowOr404(db, projectId, workflowId);
  if (!workflow.enabled) throw new ApiError(400, ErrorCode.BAD_REQUEST, 'The workflow is disabled: enable it to start executions');
  const contact = await findContactForExecution(db, projectId, { id: body.contactId, email: body.email });
  if (!contact) throw notFound('Contact');
  const id = await db.transaction().execute(async (trx) => {
    await lockEnrolment(trx, projectId);
    if (await hasExecution(trx, projectId, workflow.id, contact.id, true)) throw conflict('The contact already has an active execution of this workflow');
    if (!workflow.allow_reentry && (await hasExecution(trx, projectId, workflow.id, contact.id, false))) {
      throw conflict('The workflow does not allow re-entry and the contact has already been through it');
    }
    const executionId = await insertManualExecution(trx, projectId, { workflowId: workflow.id, contactId: contact.id, context: body.context ?? {} });
    await startExecutions(trx, projectId, [executionId]);
    return executionId;
  });
  const execution = await findExecution(db, projectId, workflow.id, id);
  if (!execution) throw notFound('Execution');
  return execution;
}

const isStatus = (s: string): s is ExecutionStatus => (EXECUTION_STATUSES as readonly string[]).includes(s);

export async function listExecutions(db: Kysely<Database>, projectId: string, workflowId: string, query: ListExecutionsQuery): Promise<WorkflowExecutionList> {
  const workflow = await workflowOr404(db, projectId, workflowId);
  if (query.status !== undefined && !isStatus(query.status)) {
    throw new ApiError(400, ErrorCode.BAD_REQUEST, `Unknown status "${query.status}": use one of ${EXECUTION_STATUSES.join(', ')}`);
  }
  const { page, pageSize } = query;
  const { rows, total } = await listExecutionPage(db, projectId, workflow.id, { status: query.status, limit: pageSize, offset: (page - 1) * pageSize });
  return { data: rows, page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

export async function getExecution(db: Kysely<Database>, projectId: string, workflowId: string, executionId: string): Promise<WorkflowExecutionDetail> {
  const execution = await findExecution(db, projectId, workflowId, executionId);
  if (!execution) throw notFound('Execution');
  return { ...execution, steps: await listStepExecutions(db, projectId, execution.id) };
}

/** DELETE: a RUNNING or WAITING execution becomes CANCELLED (its queued jobs no-ops); finished: 409. */
export async function cancelExecution(db: Kysely<Database>, projectId: string, workflowId: string, executionId: string): Promise<WorkflowExecution> {
  const found = await findExecution(db, projectId, workflowId, executionId);
  if (!found) throw notFound('Execution');
  await db.transaction().execute(async (trx) => {
    const [locked] = await lockExecutions(trx, projectId, [found.id]);
    if (!locked || (locked.status !== 'RUNNING' && locked.status !== 'WAITING')) {
      throw conflict(`The execution is ${locked?.status ?? 'gone'}: only RUNNING or WAITING executions can be cancelled`);
    }
    await cancelLockedExecutions(trx, projectId, [found.id]);
  });
  const execution = await findExecution(db, projectId, workflowId, executionId);
  if (!execution) throw notFound('Execution');
  return execution;
}

/** POST …/executions/cancel-all: every active execution of the workflow, set-based in chunks of 1,000. */
export async function cancelAllExecutions(db: Kysely<Database>, projectId: string, workflowId: string): Promise<{ cancelled: number }> {
  const workflow = await workflowOr404(db, projectId, workflowId);
  return { cancelled: await cancelActiveExecutions(db, projectId, { workflowId: workflow.id }) };
}
