import { type Kysely, sql, type Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/errors.js';
import type { Database, WorkflowBranch, WorkflowStepRow, WorkflowStepType, WorkflowTransitionRow } from '../../db/schema.js';
import { conflict, validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import type { Step, Transition } from './workflows.schema.js';
import { AT_STEP_STATUSES } from './workflows.repo.js';

type Db = Kysely<Database> | Transaction<Database>;

export function rowToStep(row: WorkflowStepRow): Step {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    config: row.config,
    position: { x: row.position_x, y: row.position_y },
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export const rowToTransition = (row: WorkflowTransitionRow): Transition => ({
  id: row.id,
  fromStepId: row.from_step_id,
  toStepId: row.to_step_id,
  branch: row.branch,
});

export async function listSteps(db: Db, projectId: string, workflowId: string): Promise<WorkflowStepRow[]> {
  return db.selectFrom('workflow_steps').selectAll().where('project_id', '=', projectId).where('workflow_id', '=', workflowId).orderBy('created_at').orderBy('id').execute();
}

export async function listTransitions(db: Db, projectId: string, workflowId: string): Promise<WorkflowTransitionRow[]> {
  return db.selectFrom('workflow_transitions').selectAll().where('project_id', '=', projectId).where('workflow_id', '=', workflowId).orderBy('created_at').orderBy('id').execute();
}

/**
 * A step of this workflow (undefined for a malformed id or a step of another workflow).
 * `forUpdate` locks the row: that waits for any uncommitted step execution the engine is inserting
 * for it (its foreign key holds KEY SHARE), so a count taken afterwards sees that execution.
 */
export async function findStep(db: Db, projectId: string, workflowId: string, stepId: string, opts: { forUpdate?: boolean } = {}): Promise<WorkflowStepRow | undefined> {
  if (!isUuid(stepId)) return undefined;
  let q = db.selectFrom('workflow_steps').selectAll().where('project_id', '=', projectId).where('workflow_id', '=', workflowId).where('id', '=', stepId);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

/** The y just below the lowest step (the "stacked" default position), x of that step. */
export async function stackedPosition(db: Db, projectId: string, workflowId: string): Promise<{ x: number; y: number }> {
  const row = await db
    .selectFrom('workflow_steps')
    .select(['position_x', 'position_y'])
    .where('project_id', '=', projectId)
    .where('workflow_id', '=', workflowId)
    .orderBy('position_y', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? { x: row.position_x, y: row.position_y + STACK_GAP } : { x: 0, y: 0 };
}
/** Vertical distance between stacked steps (editor units). */
export const STACK_GAP = 150;

export interface StepValues {
  type: WorkflowStepType;
  name: string;
  config: Record<string, unknown>;
  position: { x: number; y: number };
  templateId: string | null;
}

/** SEND_EMAIL's template deleted between the config check and the write: its foreign key refuses the row. */
async function templateGone<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    if (typeof err === 'object' && err !== null && 'code' in err && err.code === '23503' && 'constraint' in err && err.constraint === 'workflow_steps_template_id_fkey') {
      throw validationError([{ field: 'config.templateId', message: 'No template with this id in the project', code: 'not_found' }]);
    }
    throw err;
  }
}

export async function insertStep(trx: Transaction<Database>, projectId: string, workflowId: string, v: StepValues): Promise<WorkflowStepRow> {
  return templateGone(trx
    .insertInto('workflow_steps')
    .values({
      project_id: projectId,
      workflow_id: workflowId,
      type: v.type,
      name: v.name,
      config: JSON.stringify(v.config),
      position_x: v.position.x,
      position_y: v.position.y,
      template_id: v.templateId,
    })
    .returningAll()
    .executeTakeFirstOrThrow());
}

export async function updateStep(
  trx: Transaction<Database>,
  projectId: string,
  stepId: string,
  v: { name?: string; config?: Record<string, unknown>; templateId?: string | null; position?: { x: number; y: number } },
): Promise<WorkflowStepRow> {
  return templateGone(trx
    .updateTable('workflow_steps')
    .set({
      ...(v.name !== undefined && { name: v.name }),
      ...(v.config !== undefined && { config: JSON.stringify(v.config), template_id: v.templateId ?? null }),
      ...(v.position !== undefined && { position_x: v.position.x, position_y: v.position.y }),
      updated_at: sql`now()`,
    })
    .where('project_id', '=', projectId)
    .where('id', '=', stepId)
    .returningAll()
    .executeTakeFirstOrThrow());
}

/** Deletes the step; its transitions and step executions go with it (ON DELETE CASCADE). */
export async function deleteStep(trx: Transaction<Database>, projectId: string, stepId: string): Promise<void> {
  await trx.deleteFrom('workflow_steps').where('project_id', '=', projectId).where('id', '=', stepId).execute();
}

/** Step executions at the step (PENDING, WAITING, RUNNING): contacts there now (index workflow_step_executions_step_status_idx). */
export async function countAtStep(db: Db, projectId: string, stepId: string): Promise<number> {
  const row = await db
    .selectFrom('workflow_step_executions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .where('step_id', '=', stepId)
    .where('status', 'in', AT_STEP_STATUSES)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Transitions into and out of one step. */
export async function edgesOf(db: Db, projectId: string, stepId: string): Promise<{ incoming: WorkflowTransitionRow[]; outgoing: WorkflowTransitionRow[] }> {
  const rows = await db
    .selectFrom('workflow_transitions')
    .selectAll()
    .where('project_id', '=', projectId)
    .where((eb) => eb.or([eb('from_step_id', '=', stepId), eb('to_step_id', '=', stepId)]))
    .execute();
  return { incoming: rows.filter((r) => r.to_step_id === stepId), outgoing: rows.filter((r) => r.from_step_id === stepId) };
}

/** True when `to` can be reached from `from` along transitions (a new edge to → from would close a cycle). */
export async function reaches(db: Db, projectId: string, from: string, to: string): Promise<boolean> {
  const { rows } = await sql<{ found: boolean }>`
    WITH RECURSIVE r(id) AS (
      SELECT ${from}::uuid
      UNION
      SELECT t.to_step_id FROM workflow_transitions t JOIN r ON t.from_step_id = r.id WHERE t.project_id = ${projectId}::uuid)
    SELECT EXISTS (SELECT 1 FROM r WHERE id = ${to}::uuid) AS found`.execute(db);
  return rows[0]?.found === true;
}

/** Inserts a transition; a second edge for (from, branch) is a 409 (unique workflow_transitions_branch_key). */
export async function insertTransition(
  trx: Transaction<Database>,
  projectId: string,
  workflowId: string,
  v: { fromStepId: string; toStepId: string; branch: WorkflowBranch | null },
): Promise<WorkflowTransitionRow> {
  try {
    return await trx
      .insertInto('workflow_transitions')
      .values({ project_id: projectId, workflow_id: workflowId, from_step_id: v.fromStepId, to_step_id: v.toStepId, branch: v.branch })
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err, 'workflow_transitions_branch_key')) {
      throw conflict(v.branch ? `The step already has a "${v.branch}" transition` : 'The step already has an outgoing transition', { fromStepId: v.fromStepId, branch: v.branch });
    }
    throw err;
  }
}

export async function findTransition(db: Db, projectId: string, workflowId: string, id: string): Promise<WorkflowTransitionRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db.selectFrom('workflow_transitions').selectAll().where('project_id', '=', projectId).where('workflow_id', '=', workflowId).where('id', '=', id).executeTakeFirst();
}

export async function deleteTransitions(trx: Transaction<Database>, projectId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await trx.deleteFrom('workflow_transitions').where('project_id', '=', projectId).where('id', 'in', ids).execute();
}
