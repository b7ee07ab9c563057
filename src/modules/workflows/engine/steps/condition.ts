import { sql } from 'kysely';
import { compileCondition, type ConditionTree, parseField } from '../../../../conditions/index.js';
import { conditionOf } from '../../steps.schema.js';
import { emptyResults, type StepContext, type StepHandler, type StepRow } from '../types.js';

/** Whether the tree reads the execution's `event.<key>` / `context.<key>` values. */
function usesExecutionValues(tree: ConditionTree): boolean {
  return tree.groups.some(
    (g) =>
      g.filters.some((f) => parseField(f.field, { execution: true, operator: f.operator })?.kind === 'executionData') ||
      (g.conditions !== undefined && usesExecutionValues(g.conditions)),
  );
}

/** Evaluates `where` (over contacts `c`) for these executions' contacts in one query. */
async function evaluate(ctx: StepContext, rows: readonly StepRow[], where: ReturnType<typeof sql>): Promise<Set<string>> {
  const { rows: yes } = await sql<{ id: string }>`
    SELECT x.id FROM workflow_executions x
    JOIN contacts c ON c.id = x.contact_id AND c.project_id = ${ctx.projectId}::uuid
    WHERE x.project_id = ${ctx.projectId}::uuid AND x.id = ANY(${rows.map((r) => r.executionId)}::uuid[]) AND (${where})`.execute(ctx.trx);
  return new Set(yes.map((r) => r.id));
}

/**
 * CONDITION: the §7 tree compiled by src/conditions (the contact's fields, plus the execution's
 * `event.<key>` and `context.<key>` bound as jsonb parameters); branch `yes` or `no`. Without
 * execution fields the whole batch is ONE query; with them one query per execution (the values
 * differ per execution).
 */
export const condition: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const first = rows[0];
  if (!first) return results;
  const tree = conditionOf(first.config);
  const matched = new Set<string>();
  if (!usesExecutionValues(tree)) {
    const where = await compileCondition(ctx.trx, ctx.projectId, tree, 'c', { fieldPrefix: 'config' });
    for (const id of await evaluate(ctx, rows, where)) matched.add(id);
  } else {
    for (const row of rows) {
      const where = await compileCondition(ctx.trx, ctx.projectId, tree, 'c', {
        fieldPrefix: 'config',
        execution: { event: row.event, context: row.context },
      });
      for (const id of await evaluate(ctx, [row], where)) matched.add(id);
    }
  }
  for (const row of rows) {
    const yes = matched.has(row.executionId);
    results.done.push({ row, branch: yes ? 'yes' : 'no', output: { result: yes } });
  }
  return results;
};
