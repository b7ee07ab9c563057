import type { Kysely, Transaction } from 'kysely';
import type { Database, WorkflowRow } from '../../db/schema.js';
import { ApiError, conflict, ErrorCode, notFound } from '../../http/errors.js';
import { findTemplatesByIds } from '../templates/index.js';
import { listSteps, listTransitions, rowToStep, rowToTransition } from './graph.repo.js';
import { runnableProblems } from './graph-rules.js';
import { stepStats } from './stats.js';
import {
  copyWorkflow,
  countActiveExecutions,
  countsByWorkflow,
  countWorkflows,
  deleteWorkflow,
  findWorkflow,
  insertWorkflow,
  listWorkflowPage,
  rowToWorkflow,
  updateWorkflow,
} from './workflows.repo.js';
import {
  type CreateWorkflowBody,
  type ListWorkflowsQuery,
  type UpdateWorkflowBody,
  type Workflow,
  type WorkflowDetail,
  WORKFLOW_LIMITS,
  type WorkflowList,
  WORKFLOW_STATUS_FILTERS,
} from './workflows.schema.js';

type Db = Kysely<Database>;

export async function requireWorkflow(db: Db | Transaction<Database>, projectId: string, id: string, lock = false): Promise<WorkflowRow> {
  const row = await findWorkflow(db, projectId, id, lock);
  if (!row) throw notFound('Workflow');
  return row;
}

/** A disabled EVENT workflow with its TRIGGER step, in one transaction. */
export async function createWorkflow(db: Db, projectId: string, body: CreateWorkflowBody): Promise<Workflow> {
  const row = await db.transaction().execute((trx) =>
    insertWorkflow(trx, { projectId, name: body.name, description: body.description ?? '', eventName: body.eventName, allowReentry: body.allowReentry ?? false }),
  );
  return rowToWorkflow(row);
}

export async function listWorkflows(db: Db, projectId: string, query: ListWorkflowsQuery): Promise<WorkflowList> {
  const { page, pageSize, sort, dir } = query;
  if (query.status !== undefined && !(WORKFLOW_STATUS_FILTERS as readonly string[]).includes(query.status)) {
    throw new ApiError(400, ErrorCode.BAD_REQUEST, `Unknown status "${query.status}": use one of ${WORKFLOW_STATUS_FILTERS.join(', ')}`);
  }
  const filter = { search: query.search?.trim() || undefined, enabled: query.status === undefined ? undefined : query.status === 'active' };
  const [rows, total] = await Promise.all([
    listWorkflowPage(db, projectId, { filter, sort, dir, limit: pageSize, offset: (page - 1) * pageSize }),
    countWorkflows(db, projectId, filter),
  ]);
  const counts = await countsByWorkflow(
    db,
    projectId,
    rows.map((r) => r.id),
  );
  const data = rows.map((r) => {
    const c = counts.get(r.id);
    return { ...rowToWorkflow(r), stepCount: c?.steps ?? 0, executionCount: c?.executions ?? 0, activeExecutionCount: c?.active ?? 0 };
  });
  return { data, page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

/** The workflow with its steps (each with its stats and, for SEND_EMAIL, its template) and transitions. */
export async function getWorkflow(db: Db, projectId: string, id: string): Promise<WorkflowDetail> {
  const wf = await requireWorkflow(db, projectId, id);
  const [steps, transitions] = await Promise.all([listSteps(db, projectId, wf.id), listTransitions(db, projectId, wf.id)]);
  const templateIds = [...new Set(steps.flatMap((s) => (s.template_id ? [s.template_id] : [])))];
  const [stats, templates] = await Promise.all([stepStats(db, projectId, steps), findTemplatesByIds(db, projectId, templateIds)]);
  const byId = new Map(templates.map((t) => [t.id, { id: t.id, name: t.name, subject: t.subject, type: t.type }]));
  return {
    ...rowToWorkflow(wf),
    steps: steps.map((s) => {
      const step = { ...rowToStep(s), stats: stats.get(s.id) ?? { entered: 0, completed: 0, waiting: 0, failed: 0 } };
      return s.type === 'SEND_EMAIL' ? { ...step, template: (s.template_id && byId.get(s.template_id)) || null } : step;
    }),
    transitions: transitions.map(rowToTransition),
  };
}

/**
 * Metadata, trigger, enabled, allowReentry. Changing the trigger of an enabled workflow with
 * active executions is 409 (they were enrolled by the old trigger); enabling checks the graph is
 * runnable (422 naming the steps). The row is locked, so graph edits and this check serialise.
 */
export async function patchWorkflow(db: Db, projectId: string, id: string, body: UpdateWorkflowBody): Promise<Workflow> {
  const row = await db.transaction().execute(async (trx) => {
    const wf = await requireWorkflow(trx, projectId, id, true);
    const eventName = body.triggerConfig?.eventName;
    const triggerChanges = eventName !== undefined && eventName !== wf.trigger_event;
    if (triggerChanges && wf.enabled) {
      const active = await countActiveExecutions(trx, projectId, wf.id);
      if (active > 0) {
        throw conflict('The trigger of an enabled workflow cannot change while executions are active: cancel them or disable the workflow first', {
          activeExecutions: active,
        });
      }
    }
    if (body.enabled === true && !wf.enabled) await assertRunnable(trx, projectId, wf.id);
    const updated = await updateWorkflow(trx, projectId, wf.id, { ...body, eventName: triggerChanges ? eventName : undefined });
    if (!updated) throw notFound('Workflow');
    return updated;
  });
  return rowToWorkflow(row);
}

/** 422 naming each step that keeps the workflow from running (graph-rules.ts runnableProblems). */
export async function assertRunnable(trx: Transaction<Database>, projectId: string, workflowId: string): Promise<void> {
  const [steps, edges] = await Promise.all([listSteps(trx, projectId, workflowId), listTransitions(trx, projectId, workflowId)]);
  const templateIds = [...new Set(steps.flatMap((s) => (s.template_id ? [s.template_id] : [])))];
  const templates = new Set((await findTemplatesByIds(trx, projectId, templateIds)).map((t) => t.id));
  const errors = runnableProblems(
    steps.map((s) => ({ id: s.id, type: s.type, name: s.name, config: s.config, templateId: s.template_id })),
    edges.map((e) => ({ fromStepId: e.from_step_id, toStepId: e.to_step_id, branch: e.branch })),
    templates,
  );
  if (errors.length > 0) {
    throw new ApiError(422, ErrorCode.VALIDATION_ERROR, 'The workflow cannot be enabled: fix the steps named in errors', {
      errors,
      details: { steps: [...new Set(errors.map((e) => e.field.split('.')[1]))] },
    });
  }
}

/** 409 while executions are active (details.activeExecutions); the row lock keeps a new one from starting meanwhile. */
export async function removeWorkflow(db: Db, projectId: string, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const wf = await requireWorkflow(trx, projectId, id, true);
    const active = await countActiveExecutions(trx, projectId, wf.id);
    if (active > 0) throw conflict('The workflow has active executions: cancel them or let them finish first', { activeExecutions: active });
    await deleteWorkflow(trx, projectId, wf.id);
  });
}

const COPY_SUFFIX = ' (Copy)';

/** A disabled copy "<name> (Copy)" (shortened to the name limit) with its steps and transitions remapped. */
export async function duplicateWorkflow(db: Db, projectId: string, id: string): Promise<Workflow> {
  const row = await db.transaction().execute(async (trx) => {
    const wf = await requireWorkflow(trx, projectId, id, true);
    const name = `${[...wf.name].slice(0, WORKFLOW_LIMITS.name - COPY_SUFFIX.length).join('')}${COPY_SUFFIX}`;
    const copy = await copyWorkflow(trx, projectId, wf.id, name);
    if (!copy) throw notFound('Workflow');
    return copy;
  });
  return rowToWorkflow(row);
}
