import { sql } from 'kysely';
import { compileCondition } from '../../../../conditions/index.js';
import { conditionOf } from '../../steps.schema.js';
import { emptyResults, type StepHandler } from '../types.js';

/**
 * CONDITION: the §7 tree compiled by src/conditions (the contact's fields, plus the execution's
 * `event.<key>` and `context.<key>` read from the execution row, `x.event` / `x.context`); branch
 * `yes` or `no`. ONE compilation and ONE query for the whole batch, whatever the fields: the
 * executions joined to their contacts.
 */
export const condition: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const first = rows[0];
  if (!first) return results;
  const tree = conditionOf(first.config);
  const where = await compileCondition(ctx.trx, ctx.projectId, tree, 'c', {
    fieldPrefix: 'config',
    executionSql: { event: sql`x.event`, context: sql`x.context` },
  });
  const { rows: yes } = await sql<{ id: string }>`
    SELECT x.id FROM workflow_executions x
    JOIN contacts c ON c.id = x.contact_id AND c.project_id = ${ctx.projectId}::uuid
    WHERE x.project_id = ${ctx.projectId}::uuid AND x.id = ANY(${rows.map((r) => r.executionId)}::uuid[]) AND (${where})`.execute(ctx.trx);
  const matched = new Set(yes.map((r) => r.id));
  for (const row of rows) {
    const match = matched.has(row.executionId);
    results.done.push({ row, branch: match ? 'yes' : 'no', output: { result: match } });
  }
  return results;
};
