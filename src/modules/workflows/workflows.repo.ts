import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql, type Transaction } from 'kysely';
import { ilikeAny, NAME_DATE_SORT_KEYS } from '../../db/query.js';
import type { Database, WorkflowRow } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import type { Workflow, WorkflowSort } from './workflows.schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Step execution statuses of a contact that is at a step (not yet past it). */
export const AT_STEP_STATUSES = ['PENDING', 'WAITING', 'RUNNING'] as const;

export function rowToWorkflow(row: WorkflowRow): Workflow {
  const eventName = row.trigger_config.eventName;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    triggerType: row.trigger_type,
    triggerConfig: { eventName: typeof eventName === 'string' ? eventName : '' },
    enabled: row.enabled,
    allowReentry: row.allow_reentry,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The workflow and its TRIGGER step (at 0, 0), in the caller's transaction. */
export async function insertWorkflow(
  trx: Transaction<Database>,
  v: { projectId: string; name: string; description: string; eventName: string; allowReentry: boolean },
): Promise<WorkflowRow> {
  const row = await trx
    .insertInto('workflows')
    .values({
      project_id: v.projectId,
      name: v.name,
      description: v.description,
      trigger_config: JSON.stringify({ eventName: v.eventName }),
      allow_reentry: v.allowReentry,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await trx.insertInto('workflow_steps').values({ project_id: v.projectId, workflow_id: row.id, type: 'TRIGGER', name: 'Trigger', config: '{}' }).execute();
  return row;
}

/** The workflow (undefined for another project's or a malformed id); `lock` takes FOR UPDATE (graph edits serialise on it). */
export async function findWorkflow(db: Db, projectId: string, id: string, lock = false): Promise<WorkflowRow | undefined> {
  if (!isUuid(id)) return undefined;
  let q = db.selectFrom('workflows').selectAll().where('project_id', '=', projectId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export interface WorkflowFilter {
  search?: string;
  enabled?: boolean;
}

function filterWhere(projectId: string, filter: WorkflowFilter) {
  return (eb: ExpressionBuilder<Database, 'workflows'>) => {
    const conditions: Expression<SqlBool>[] = [eb('project_id', '=', projectId)];
    if (filter.enabled !== undefined) conditions.push(eb('enabled', '=', filter.enabled));
    if (filter.search) conditions.push(ilikeAny(['name', 'description'], filter.search));
    return eb.and(conditions);
  };
}

export async function listWorkflowPage(
  db: Db,
  projectId: string,
  opts: { filter: WorkflowFilter; sort: WorkflowSort; dir: 'asc' | 'desc'; limit: number; offset: number },
): Promise<WorkflowRow[]> {
  let q = db.selectFrom('workflows').selectAll().where(filterWhere(projectId, opts.filter)).orderBy(NAME_DATE_SORT_KEYS[opts.sort], opts.dir);
  if (opts.sort === 'name') q = q.orderBy('name', opts.dir);
  return q.orderBy('id', opts.dir).limit(opts.limit).offset(opts.offset).execute();
}

export async function countWorkflows(db: Db, projectId: string, filter: WorkflowFilter): Promise<number> {
  const row = await db.selectFrom('workflows').select((eb) => eb.fn.countAll<number>().as('n')).where(filterWhere(projectId, filter)).executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface WorkflowCounts {
  steps: number;
  executions: number;
  active: number;
}

/** Step and execution counts of the given workflows: one statement, each table aggregated once grouped by workflow. */
export async function countsByWorkflow(db: Db, projectId: string, ids: readonly string[]): Promise<Map<string, WorkflowCounts>> {
  const out = new Map<string, WorkflowCounts>();
  if (ids.length === 0) return out;
  const { rows } = await sql<WorkflowCounts & { id: string }>`
    WITH s AS (
      SELECT workflow_id, count(*)::int AS n FROM workflow_steps
      WHERE project_id = ${projectId}::uuid AND workflow_id = ANY(${ids}::uuid[]) GROUP BY workflow_id),
    e AS (
      SELECT workflow_id, count(*)::int AS total, (count(*) FILTER (WHERE status IN ('RUNNING', 'WAITING')))::int AS active
      FROM workflow_executions WHERE project_id = ${projectId}::uuid AND workflow_id = ANY(${ids}::uuid[]) GROUP BY workflow_id)
    SELECT w.id, coalesce(s.n, 0) AS steps, coalesce(e.total, 0) AS executions, coalesce(e.active, 0) AS active
    FROM unnest(${ids}::uuid[]) AS w(id) LEFT JOIN s ON s.workflow_id = w.id LEFT JOIN e ON e.workflow_id = w.id`.execute(db);
  for (const { id, ...c } of rows) out.set(id, c);
  return out;
}

export async function updateWorkflow(
  db: Db,
  projectId: string,
  id: string,
  changes: { name?: string; description?: string; enabled?: boolean; allowReentry?: boolean; eventName?: string },
): Promise<WorkflowRow | undefined> {
  return db
    .updateTable('workflows')
    .set({
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.description !== undefined && { description: changes.description }),
      ...(changes.enabled !== undefined && { enabled: changes.enabled }),
      ...(changes.allowReentry !== undefined && { allow_reentry: changes.allowReentry }),
      ...(changes.eventName !== undefined && { trigger_config: JSON.stringify({ eventName: changes.eventName }) }),
      updated_at: sql`now()`,
    })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Marks the definition changed (graph edits). */
export async function touchWorkflow(trx: Transaction<Database>, projectId: string, id: string): Promise<void> {
  await trx.updateTable('workflows').set({ updated_at: sql`now()` }).where('project_id', '=', projectId).where('id', '=', id).execute();
}

export async function deleteWorkflow(trx: Transaction<Database>, projectId: string, id: string): Promise<void> {
  await trx.deleteFrom('workflows').where('project_id', '=', projectId).where('id', '=', id).execute();
}

/** Executions RUNNING or WAITING (index workflow_executions_list_idx). */
export async function countActiveExecutions(db: Db, projectId: string, workflowId: string): Promise<number> {
  const row = await db
    .selectFrom('workflow_executions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', projectId)
    .where('workflow_id', '=', workflowId)
    .where('status', 'in', ['RUNNING', 'WAITING'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * A disabled copy named `name` with every step (new ids, same type, name, config, position,
 * template) and every transition remapped to the new steps: two set-based statements in the
 * caller's transaction.
 */
export async function copyWorkflow(trx: Transaction<Database>, projectId: string, id: string, name: string): Promise<WorkflowRow | undefined> {
  const row = await sql<WorkflowRow>`
    INSERT INTO workflows (project_id, name, description, trigger_type, trigger_config, enabled, allow_reentry)
    SELECT project_id, ${name}, description, trigger_type, trigger_config, false, allow_reentry
    FROM workflows WHERE project_id = ${projectId}::uuid AND id = ${id}::uuid
    RETURNING *`.execute(trx);
  const copy = row.rows[0];
  if (!copy) return undefined;
  // One statement: the steps' foreign keys are checked at its end, after both inserts.
  await sql`
    WITH map AS MATERIALIZED (
      SELECT id AS old_id, uuid_generate_v7() AS new_id FROM workflow_steps WHERE project_id = ${projectId}::uuid AND workflow_id = ${id}::uuid),
    steps AS (
      INSERT INTO workflow_steps (project_id, id, workflow_id, type, name, config, position_x, position_y, template_id)
      SELECT s.project_id, m.new_id, ${copy.id}::uuid, s.type, s.name, s.config, s.position_x, s.position_y, s.template_id
      FROM workflow_steps s JOIN map m ON m.old_id = s.id WHERE s.project_id = ${projectId}::uuid)
    INSERT INTO workflow_transitions (project_id, workflow_id, from_step_id, to_step_id, branch)
    SELECT t.project_id, ${copy.id}::uuid, f.new_id, o.new_id, t.branch
    FROM workflow_transitions t JOIN map f ON f.old_id = t.from_step_id JOIN map o ON o.old_id = t.to_step_id
    WHERE t.project_id = ${projectId}::uuid AND t.workflow_id = ${id}::uuid`.execute(trx);
  return copy;
}
