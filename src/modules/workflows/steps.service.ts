import type { Kysely, Transaction } from 'kysely';
import { validateCondition } from '../../conditions/index.js';
import type { Database, WorkflowBranch, WorkflowStepRow, WorkflowStepType, WorkflowTransitionRow } from '../../db/schema.js';
import { ApiError, conflict, type FieldError, notFound, validationError } from '../../http/errors.js';
import { dataLimitIssues, RESERVED_DATA_KEYS } from '../contacts/index.js';
import { findTemplate } from '../templates/index.js';
import {
  countAtStep,
  deleteStep,
  deleteTransitions,
  edgesOf,
  findStep,
  findTransition,
  insertStep,
  insertTransition,
  reaches,
  rowToStep,
  rowToTransition,
  stackedPosition,
  updateStep,
} from './graph.repo.js';
import { branchesOf, branchOf, configKeepsEdges, transitionProblem } from './graph-rules.js';
import { parseStepConfig } from './steps.schema.js';
import { touchWorkflow } from './workflows.repo.js';
import type { AddedStep, AddStepBody, AddTransitionBody, Step, Transition, UpdateStepBody } from './workflows.schema.js';
import { requireWorkflow } from './workflows.service.js';

type Db = Kysely<Database>;
type Trx = Transaction<Database>;

/**
 * Graph edits. Each runs in one transaction that first locks the workflow row (FOR UPDATE), so
 * concurrent edits of one workflow serialise: two transitions that together would close a cycle
 * cannot both pass the reachability check.
 */
async function editGraph<T>(db: Db, projectId: string, workflowId: string, edit: (trx: Trx, wfId: string) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const wf = await requireWorkflow(trx, projectId, workflowId, true);
    const out = await edit(trx, wf.id);
    await touchWorkflow(trx, projectId, wf.id);
    return out;
  });
}

/** The step, locked: the executions-at-step checks of edits and deletes then see every committed arrival. */
async function requireStep(trx: Trx, projectId: string, workflowId: string, stepId: string): Promise<WorkflowStepRow> {
  const step = await findStep(trx, projectId, workflowId, stepId, { forUpdate: true });
  if (!step) throw notFound('Step');
  return step;
}

/**
 * A config checked against its type's schema, then what needs the database: SEND_EMAIL's template
 * in the project, CONDITION's tree (execution fields allowed), UPDATE_CONTACT's data rules.
 * Answers the normalised config and the template id to store beside it.
 */
export async function checkStepConfig(
  db: Db | Trx,
  projectId: string,
  type: WorkflowStepType,
  raw: unknown,
): Promise<{ config: Record<string, unknown>; templateId: string | null }> {
  const parsed = parseStepConfig(type, raw);
  if (parsed.errors) throw validationError(parsed.errors);
  const { config } = parsed;
  if (type === 'SEND_EMAIL') {
    const templateId = String(config.templateId);
    if (!(await findTemplate(db, projectId, templateId))) {
      throw validationError([{ field: 'config.templateId', message: 'No template with this id in the project', code: 'not_found', received: templateId }]);
    }
    return { config, templateId };
  }
  if (type === 'CONDITION') await checkCondition(db, projectId, config);
  if (type === 'UPDATE_CONTACT' && config.updates) checkUpdates(config.updates);
  return { config, templateId: null };
}

async function checkCondition(db: Db | Trx, projectId: string, config: Record<string, unknown>): Promise<void> {
  if ('condition' in config) {
    await validateCondition(db, projectId, config.condition, 'config.condition', { executionFields: true });
    return;
  }
  const tree = { logic: 'AND', groups: [{ filters: [config] }] };
  try {
    await validateCondition(db, projectId, tree, 'config', { executionFields: true });
  } catch (err) {
    // The single-filter form: `config.groups.0.filters.0.operator` is the step's `config.operator`.
    if (err instanceof ApiError && err.errors) {
      throw validationError(err.errors.map((e) => ({ ...e, field: e.field.replace(/^config\.groups\.0\.filters\.0(?=\.|$)/, 'config') })));
    }
    throw err;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkUpdates(data: unknown): void {
  if (!isRecord(data)) return;
  const errors: FieldError[] = Object.keys(data)
    .filter((k) => RESERVED_DATA_KEYS.has(k))
    .map((k) => ({ field: `config.updates.${k}`, message: `${k} is a reserved key and is never stored in contact data`, code: 'reserved_key' }));
  for (const i of dataLimitIssues(data)) errors.push({ field: i.key === undefined ? 'config.updates' : `config.updates.${i.key}`, message: i.message, code: i.code });
  if (errors.length > 0) throw validationError(errors);
}

/**
 * Adds a step. With `insert: {transitionId}` the step goes on that transition (A →b B becomes
 * A →b new →out B, `out` the new step's first output); with `after: {stepId, branch}` it is linked
 * from that output. Everything happens in the one transaction under the workflow lock, so a rule
 * that fails, or an edge another edit took first (404 gone transition, 409 taken output), leaves
 * no step behind. The answer then carries the transitions created.
 */
export async function addStep(db: Db, projectId: string, workflowId: string, body: AddStepBody): Promise<AddedStep> {
  if (body.insert && body.after) throw validationError([{ field: 'after', message: 'Give insert or after, not both', code: 'invalid_value' }]);
  const { config, templateId } = await checkStepConfig(db, projectId, body.type, body.config ?? {});
  const out = body.insert ? firstOutput(body.type, config) : undefined;
  return editGraph(db, projectId, workflowId, async (trx, wfId) => {
    const edge = body.insert ? await findTransition(trx, projectId, wfId, body.insert.transitionId) : undefined;
    if (body.insert && !edge) throw notFound('Transition');
    const from = body.after ? await findStep(trx, projectId, wfId, body.after.stepId) : undefined;
    if (body.after && !from) throw validationError([{ field: 'after.stepId', message: 'No step with this id in the workflow', code: 'not_found', received: body.after.stepId }]);
    const position = body.position ?? (await stackedPosition(trx, projectId, wfId));
    const row = await insertStep(trx, projectId, wfId, { type: body.type, name: body.name ?? '', config, position, templateId });
    const step = rowToStep(row);
    if (edge) {
      const [source, target] = await Promise.all([findStep(trx, projectId, wfId, edge.from_step_id), findStep(trx, projectId, wfId, edge.to_step_id)]);
      if (!source || !target) throw notFound('Transition');
      await deleteTransitions(trx, projectId, [edge.id]);
      const onEdge = { fromStepId: 'insert.transitionId', toStepId: 'insert.transitionId', branch: 'insert.transitionId' };
      const into = await link(trx, projectId, wfId, source, row, edge.branch, onEdge);
      const onward = await link(trx, projectId, wfId, row, target, out ?? null, onEdge);
      return { ...step, transitions: [into, onward].map(rowToTransition) };
    }
    if (from) {
      const t = await link(trx, projectId, wfId, from, row, body.after?.branch ?? null, { fromStepId: 'after.stepId', toStepId: 'after.stepId', branch: 'after.branch' });
      return { ...step, transitions: [rowToTransition(t)] };
    }
    return step;
  });
}

/** The output a step inserted between two steps continues on; EXIT has none (422 `type`). */
function firstOutput(type: WorkflowStepType, config: Record<string, unknown>): WorkflowBranch | null {
  const outputs = branchesOf({ type, config });
  if (outputs === null) throw validationError([{ field: 'type', message: `${type} steps end the execution: they cannot go between two steps`, code: 'invalid_transition' }]);
  return outputs[0] ?? null;
}

type LinkFields = Record<'fromStepId' | 'toStepId' | 'branch', string>;

/** A 422 of the transition rules with its fields named as the caller's body names them. */
function renamed(err: ApiError, fields: LinkFields): ApiError {
  if (!err.errors) return err;
  return validationError(err.errors.map((e) => ({ ...e, field: fields[e.field as keyof LinkFields] ?? e.field })));
}

/**
 * One transition `from → to` (branch) after the rules of POST /transitions: per-step rules and no
 * cycle (422, fields named by `fields`), one edge per (step, branch) (409, the unique index).
 */
async function link(trx: Trx, projectId: string, wfId: string, from: WorkflowStepRow, to: WorkflowStepRow, branch: WorkflowBranch | null, fields: LinkFields): Promise<WorkflowTransitionRow> {
  const problem = transitionProblem(from, to, branch);
  if (problem) throw renamed(problem, fields);
  if (await reaches(trx, projectId, to.id, from.id)) {
    throw validationError([{ field: fields.toStepId, message: 'This transition would create a cycle: the target step already leads back to the source', code: 'cycle' }]);
  }
  return insertTransition(trx, projectId, wfId, { fromStepId: from.id, toStepId: to.id, branch });
}

/**
 * Name and position: always. Config: re-validated for the step's type (which never changes), and
 * refused (409, details.waitingExecutions) while executions are at the step: they were started
 * with the old config.
 */
export async function patchStep(db: Db, projectId: string, workflowId: string, stepId: string, body: UpdateStepBody): Promise<Step> {
  const row = await editGraph(db, projectId, workflowId, async (trx, wfId) => {
    const step = await requireStep(trx, projectId, wfId, stepId);
    let checked: { config: Record<string, unknown>; templateId: string | null } | undefined;
    if (body.config !== undefined) {
      if (step.type === 'TRIGGER') throw validationError([{ field: 'config', message: "The TRIGGER step's config is the workflow's triggerConfig (PATCH /workflows/:id)", code: 'invalid_value' }]);
      checked = await checkStepConfig(trx, projectId, step.type, body.config);
      const waiting = await countAtStep(trx, projectId, step.id);
      if (waiting > 0) throw conflict('Executions are at this step: its config cannot change until they move on', { waitingExecutions: waiting });
      const { outgoing } = await edgesOf(trx, projectId, step.id);
      const kept = configKeepsEdges(step, checked.config, outgoing.map((e) => ({ fromStepId: e.from_step_id, toStepId: e.to_step_id, branch: e.branch })));
      if (kept) throw kept;
    }
    return updateStep(trx, projectId, step.id, { name: body.name, position: body.position, config: checked?.config, templateId: checked?.templateId });
  });
  return rowToStep(row);
}

/**
 * Deletes a step and its transitions (TRIGGER: 409). With `splice`, its single predecessor is
 * linked to its single successor with the predecessor's branch (409 when there are several of
 * either, or the new edge breaks a rule). 409 while executions are at the step.
 */
export async function removeStep(db: Db, projectId: string, workflowId: string, stepId: string, splice: boolean): Promise<void> {
  await editGraph(db, projectId, workflowId, async (trx, wfId) => {
    const step = await requireStep(trx, projectId, wfId, stepId);
    if (step.type === 'TRIGGER') throw conflict('The TRIGGER step cannot be deleted', { stepId: step.id });
    const waiting = await countAtStep(trx, projectId, step.id);
    if (waiting > 0) throw conflict('Executions are at this step: it cannot be deleted until they move on', { waitingExecutions: waiting });
    const { incoming, outgoing } = await edgesOf(trx, projectId, step.id);
    await deleteStep(trx, projectId, step.id);
    if (!splice || incoming.length === 0 || outgoing.length === 0) return;
    const [into] = incoming;
    const [out] = outgoing;
    if (incoming.length > 1 || outgoing.length > 1 || !into || !out) {
      throw conflict('Splice needs exactly one incoming and one outgoing transition', { incoming: incoming.length, outgoing: outgoing.length });
    }
    const from = await requireStep(trx, projectId, wfId, into.from_step_id);
    const to = await requireStep(trx, projectId, wfId, out.to_step_id);
    const problem = transitionProblem({ ...from, config: from.config }, { ...to, config: to.config }, into.branch);
    if (problem) throw conflict(`Splice would create an invalid transition: ${problem.errors?.[0]?.message ?? problem.message}`, { fromStepId: from.id, toStepId: to.id });
    await insertTransition(trx, projectId, wfId, { fromStepId: from.id, toStepId: to.id, branch: into.branch });
  });
}

export async function addTransition(db: Db, projectId: string, workflowId: string, body: AddTransitionBody): Promise<Transition> {
  const branch = branchOf(body);
  const row = await editGraph(db, projectId, workflowId, async (trx, wfId) => {
    const [from, to] = await Promise.all([findStep(trx, projectId, wfId, body.fromStepId), findStep(trx, projectId, wfId, body.toStepId)]);
    const missing: FieldError[] = [];
    if (!from) missing.push({ field: 'fromStepId', message: 'No step with this id in the workflow', code: 'not_found', received: body.fromStepId });
    if (!to) missing.push({ field: 'toStepId', message: 'No step with this id in the workflow', code: 'not_found', received: body.toStepId });
    if (!from || !to) throw validationError(missing);
    return link(trx, projectId, wfId, from, to, branch, { fromStepId: 'fromStepId', toStepId: 'toStepId', branch: 'branch' });
  });
  return rowToTransition(row);
}

export async function removeTransition(db: Db, projectId: string, workflowId: string, transitionId: string): Promise<void> {
  await editGraph(db, projectId, workflowId, async (trx, wfId) => {
    const t = await findTransition(trx, projectId, wfId, transitionId);
    if (!t) throw notFound('Transition');
    await deleteTransitions(trx, projectId, [t.id]);
  });
}
