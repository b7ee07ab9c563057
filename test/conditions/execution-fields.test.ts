import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, validateCondition } from '../../src/conditions/index.js';
import { ApiError } from '../../src/http/errors.js';
import { newProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let projectId: string;
beforeAll(async () => {
  t = await createTestApp();
  projectId = (await newProject(t.app)).project.id;
  await t.db.db.insertInto('contacts').values({ project_id: projectId, email: 'only@example.com', subscribed: true }).execute();
});
afterAll(() => t.close());

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => (e instanceof ApiError ? e.errors?.map((x) => `${x.field}:${x.code}`) : e),
  );

/** Whether the project's one contact matches the tree under these execution values. */
async function matches(t1: object, execution: { event: Record<string, unknown>; context: Record<string, unknown> }): Promise<boolean> {
  const where = await compileCondition(t.db.db, projectId, t1, 'c', { execution });
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}`.execute(t.db.db);
  return rows[0]?.n === 1;
}

describe('execution fields (workflow CONDITION steps)', () => {
  it('segments and campaigns (no option) still refuse context.<key> and event.<key> comparisons', async () => {
    expect(await failure(validateCondition(t.db.db, projectId, tree({ field: 'context.x', operator: 'exists' }), 'condition'))).toEqual([
      'condition.groups.0.filters.0.field:unknown_field',
    ]);
    expect(await failure(validateCondition(t.db.db, projectId, tree({ field: 'event.total', operator: 'equals', value: 1 }), 'condition'))).toEqual([
      'condition.groups.0.filters.0.operator:invalid_operator',
    ]);
    // Compiling such a tree without execution values is a 422 too, never SQL.
    expect(await failure(compileCondition(t.db.db, projectId, tree({ field: 'context.x', operator: 'exists' })))).toEqual(['condition.groups.0.filters.0.field:unknown_field']);
  });
  it('with executionFields: event.<key>/context.<key> take comparison operators; event.<name> keeps triggered…', async () => {
    const ok = (f: object) => validateCondition(t.db.db, projectId, tree(f), 'c', { executionFields: true });
    await ok({ field: 'event.total', operator: 'greaterThan', value: 10 });
    await ok({ field: 'context.plan', operator: 'notExists' });
    await ok({ field: 'event.purchased', operator: 'triggered' });
    expect(await failure(ok({ field: 'context.at', operator: 'within', value: 1, unit: 'days' }))).toEqual(['c.groups.0.filters.0.operator:invalid_operator']);
  });
  it('compiles against the execution values like data.<key> (numbers numerically, contains case-insensitive, exists)', async () => {
    const exec = { event: { total: '42', sku: 'ABC-1' }, context: { vip: true } };
    expect(await matches(tree({ field: 'event.total', operator: 'greaterThan', value: 40 }), exec)).toBe(true);
    expect(await matches(tree({ field: 'event.total', operator: 'lessThan', value: 40 }), exec)).toBe(false);
    expect(await matches(tree({ field: 'event.sku', operator: 'contains', value: 'abc' }), exec)).toBe(true);
    expect(await matches(tree({ field: 'context.vip', operator: 'equals', value: true }), exec)).toBe(true);
    expect(await matches(tree({ field: 'context.vip', operator: 'notExists' }), exec)).toBe(false);
    expect(await matches(tree({ field: 'context.missing', operator: 'notEquals', value: 1 }), exec)).toBe(true);
    expect(await matches(tree({ field: 'event.purchased', operator: 'notTriggered' }), exec)).toBe(true);
  });
});
