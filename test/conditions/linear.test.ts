import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, type ConditionTree } from '../../src/conditions/index.js';
import type { Filter } from '../../src/conditions/tree.js';
import type { Db } from '../../src/db/connection.js';
import { createMigratedDatabase, insertBareProject, type MigratedDatabase } from '../helpers/database.js';

/**
 * Issue 15 point 3: a condition compiles to SQL whose size (text, parameters) and plan grow
 * linearly with the expanded condition, whatever its shape: wide groups, many groups, nesting,
 * chains of segment references. For each shape the condition is compiled at sizes n, 2n and 4n;
 * the growth from 2n to 4n must be twice the growth from n to 2n (±15 %). Quadratic growth makes
 * that ratio 4, exponential growth more; sub-linear (a shared part) less.
 *
 * On a database of its own: the plans counted depend on the tables' statistics, which the other
 * files' rows would change with the order files run in.
 */

let own: MigratedDatabase;
let db: Db;
let projectId = '';
let dynamicId: string;
let staticId: string;
beforeAll(async () => {
  own = await createMigratedDatabase('linear', { max: 2 });
  db = own.db;
  projectId = await insertBareProject(db.db, 'linear');
  const insert = async (type: 'DYNAMIC' | 'STATIC', condition: object | null) =>
    (
      await db.db
        .insertInto('segments')
        .values({ project_id: projectId, name: type, type, condition: condition && JSON.stringify(condition) })
        .returning('id')
        .executeTakeFirstOrThrow()
    ).id;
  dynamicId = await insert('DYNAMIC', { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] });
  staticId = await insert('STATIC', null);
}, 120_000);
afterAll(() => own?.close());

/** One filter of every operator family, cycled through by the shapes below. */
const family = (): Filter[] => [
  { field: 'email', operator: 'equals', value: 'A@x.example' },
  { field: 'email', operator: 'contains', value: 'x' },
  { field: 'subscribed', operator: 'equals', value: true },
  { field: 'createdAt', operator: 'within', value: 3, unit: 'days' },
  { field: 'updatedAt', operator: 'lessThan', value: '2024-01-01' },
  { field: 'data.age', operator: 'equals', value: 30 },
  { field: 'data.plan', operator: 'notEquals', value: 'free' },
  { field: 'data.city', operator: 'contains', value: 'ber' },
  { field: 'data.city', operator: 'notContains', value: 'par' },
  { field: 'data.vip', operator: 'exists' },
  { field: 'data.vip', operator: 'notExists' },
  { field: 'data.age', operator: 'greaterThan', value: 40 },
  { field: 'data.signup', operator: 'lessThanOrEqual', value: '2025-01-01' },
  { field: 'data.signup', operator: 'within', value: 7, unit: 'days' },
  { field: 'event.purchase', operator: 'triggered' },
  { field: 'event.login', operator: 'notTriggered' },
  { field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' },
  { field: 'email.opened', operator: 'notTriggeredWithin', value: 30, unit: 'days' },
  { field: `segment.${dynamicId}`, operator: 'memberOfSegment' },
  { field: `segment.${staticId}`, operator: 'notMemberOfSegment' },
];
const filters = (n: number): Filter[] => Array.from({ length: n }, (_, i) => family()[i % family().length] as Filter);

interface Size {
  text: number;
  params: number;
  planNodes: number;
}

/** Compiled size of `tree` and the node count of the count query's plan (EXPLAIN, not run). */
async function size(tree: ConditionTree): Promise<Size> {
  const where = await compileCondition(db.db, projectId, tree, 'c');
  const q = sql`SELECT count(*) FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}`;
  const compiled = q.compile(db.db);
  const { rows } = await sql<{ 'QUERY PLAN': unknown }>`EXPLAIN (FORMAT JSON) ${q}`.execute(db.db);
  const plan: unknown = rows[0]?.['QUERY PLAN'];
  let planNodes = 0;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== 'object' || node === null) return;
    if ('Node Type' in node) planNodes++;
    Object.values(node).forEach(walk);
  };
  walk(plan);
  return { text: compiled.sql.length, params: compiled.parameters.length, planNodes };
}

/**
 * Asserts linear growth over `shape(m)`, `shape(2m)`, `shape(4m)`: the text and parameters grow,
 * and the growth doubles (±15 %); the plan grows at most linearly (scalar filters add no node).
 */
async function expectLinear(label: string, shape: (m: number) => ConditionTree | Promise<ConditionTree>, m: number): Promise<void> {
  const [s1, s2, s4] = [await size(await shape(m)), await size(await shape(2 * m)), await size(await shape(4 * m))];
  for (const k of ['text', 'params', 'planNodes'] as const) {
    const first = s2[k] - s1[k];
    const second = s4[k] - s2[k];
    const message = `${label} ${k}: ${s1[k]} → ${s2[k]} → ${s4[k]} is not linear`;
    if (k !== 'planNodes') {
      expect(first, message).toBeGreaterThan(0);
      expect(second / first, message).toBeGreaterThan(1.7);
    }
    expect(second, message).toBeLessThanOrEqual(2.3 * first);
  }
}

describe('compiled size is linear in the expanded condition', () => {
  it('wide: one group of m × (one filter of every operator family)', async () => {
    await expectLinear('wide', (m) => ({ logic: 'AND', groups: [{ filters: filters(m * family().length) }] }), 1);
  });

  it('many groups: OR of 5m groups of four filters', async () => {
    await expectLinear('groups', (m) => ({ logic: 'OR', groups: Array.from({ length: 5 * m }, (_, g) => ({ filters: filters(20).slice((g % 5) * 4, (g % 5) * 4 + 4) })) }), 1);
  });

  it('nested: 2m levels, each an event filter, a data filter and the next level', async () => {
    const level = filters(20).slice(11, 13).concat(filters(20).slice(16, 17)); // data.age > 40, data.signup <=, event.purchase within
    const nested = (levels: number): ConditionTree => {
      let tree: ConditionTree = { logic: 'AND', groups: [{ filters: level }] };
      for (let i = 1; i < levels; i++) tree = { logic: i % 2 ? 'OR' : 'AND', groups: [{ filters: level, conditions: tree }] };
      return tree;
    };
    await expectLinear('nested', nested, 2);
  });

  it('references: a chain of m DYNAMIC segments, each referencing the next twice (2^m paths, m definitions)', async () => {
    let created = 0;
    const chain = async (m: number): Promise<ConditionTree> => {
      let id = dynamicId;
      for (let i = 0; i < m; i++) {
        const ref = { field: `segment.${id}`, operator: 'memberOfSegment' };
        const condition = { logic: 'OR', groups: [{ filters: [ref, filters(20)[16]] }, { filters: [ref, filters(20)[11]] }] };
        id = (
          await db.db
            .insertInto('segments')
            .values({ project_id: projectId, name: `chain ${created++}`, type: 'DYNAMIC', condition: JSON.stringify(condition) })
            .returning('id')
            .executeTakeFirstOrThrow()
        ).id;
      }
      return { logic: 'AND', groups: [{ filters: [{ field: `segment.${id}`, operator: 'memberOfSegment' }] }] };
    };
    await expectLinear('references', chain, 1);
  });
});
