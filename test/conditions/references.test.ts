import type { Response as InjectResponse } from 'light-my-request';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, MAX_EXPANDED_FILTERS, MAX_EXPANDED_REFERENCES } from '../../src/conditions/index.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { seedPeople } from './fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** Counts the statements this process sends to PostgreSQL while `fn` runs (every query goes through pg.Client#query). */
async function countQueries<T>(fn: () => Promise<T>): Promise<{ result: T; queries: number }> {
  const original = pg.Client.prototype.query;
  let queries = 0;
  const counting = function (this: pg.Client, ...args: Parameters<typeof original>) {
    queries++;
    return original.apply(this, args);
  };
  pg.Client.prototype.query = counting as typeof original;
  try {
    return { result: await fn(), queries };
  } finally {
    pg.Client.prototype.query = original;
  }
}

type Call = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => Promise<InjectResponse>;
const caller = (project: TestProject): Call => (method, url, payload) =>
  t.app.inject({ method, url, headers: bearer(project.secret), ...(payload && { payload }) });

const ref = (id: string) => ({ field: `segment.${id}`, operator: 'memberOfSegment' });
const pad = (tag: string) => ({ field: 'email', operator: 'notContains', value: `zz-${tag}-${'p'.repeat(40)}` });
const PRO = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };

async function createSegment(call: Call, name: string, condition: object): Promise<string> {
  const res = await call('POST', '/segments', { name, condition });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

/**
 * The shape of the report: five ~1 KB segments, each referencing the next ten times (the last one
 * is `data.plan = pro`). Expanded per reference that is 10^4 copies of the last condition.
 */
async function chainOfFive(call: Call): Promise<string[]> {
  const ids = [await createSegment(call, 'level 5', PRO)];
  for (let level = 4; level >= 1; level--) {
    const next = ids[0] ?? '';
    const groups = Array.from({ length: 10 }, (_, i) => ({ filters: [ref(next), pad(`${level}-${i}`)] }));
    ids.unshift(await createSegment(call, `level ${level}`, { logic: 'OR', groups }));
  }
  return ids;
}

describe('segments referencing segments', () => {
  it('answers a members page of five segments of ten references each at once, with a bounded number of queries', async () => {
    const { project } = await newProject(t.app);
    await seedPeople(t.db, project.id);
    const call = caller(project);
    const [top = ''] = await chainOfFive(call);
    const started = Date.now();
    const { result: page, queries } = await countQueries(() => call('GET', `/segments/${top}/contacts`));
    expect(page.statusCode, page.body).toBe(200);
    expect(page.json<{ data: { email: string }[]; total: number }>().data.map((c) => c.email.split('@')[0]).sort()).toEqual(['alice', 'ivan']);
    // One query per level of references (4), the segment, the page, the cached count and the count — not one per reference (11,110).
    expect(queries).toBeLessThanOrEqual(12);
    // Was 19 s then a 500; takes ~30 ms on a loaded two-core machine: 5 s is far from both.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('compiles each referenced segment once: the SQL grows with the segments, not with the paths to them', async () => {
    const { project } = await newProject(t.app);
    const [top = ''] = await chainOfFive(caller(project));
    const { result, queries } = await countQueries(() => compileCondition(t.db.db, project.id, { logic: 'AND', groups: [{ filters: [ref(top), ref(top)] }] }));
    expect(queries).toBe(5); // one per level of references
    const compiled = result.compile(t.db.db);
    // 5 segments × ≤ 20 filters, a few parameters each: well under 200 (inlined per reference it was > 40,000).
    expect(compiled.parameters.length).toBeLessThan(200);
    expect(compiled.sql.match(/MATERIALIZED/g)).toHaveLength(5);
  });

  it('loads the segments of one level of references in one query, however many there are', async () => {
    const { project } = await newProject(t.app);
    const call = caller(project);
    const leaf = await createSegment(call, 'leaf', PRO);
    const mids: string[] = [];
    for (let i = 0; i < 10; i++) mids.push(await createSegment(call, `mid ${i}`, { logic: 'AND', groups: [{ filters: [ref(leaf), pad(`${i}`)] }] }));
    const wide = { logic: 'OR', groups: mids.map((m) => ({ filters: [ref(m)] })) };
    const { queries } = await countQueries(() => compileCondition(t.db.db, project.id, wide));
    expect(queries).toBe(2); // the ten mids, then the leaf
  });

  it('refuses a condition whose referenced graph passes the limits, on create and PATCH (422 naming the limit)', async () => {
    const { project } = await newProject(t.app);
    const call = caller(project);
    const leaf = await createSegment(call, 'leaf', PRO);
    // Six segments of 20 references each: valid alone, 6 + 120 references behind one condition.
    const mids: string[] = [];
    for (let i = 0; i < 6; i++) mids.push(await createSegment(call, `mid ${i}`, { logic: 'OR', groups: [{ filters: Array.from({ length: 20 }, () => ref(leaf)) }] }));
    const tooMany = { logic: 'OR', groups: mids.map((m) => ({ filters: [ref(m)] })) };
    const refused = await call('POST', '/segments', { name: 'top', condition: tooMany });
    expect(refused.statusCode).toBe(422);
    expect(refused.json<{ error: { errors: unknown[] } }>().error.errors).toEqual([
      expect.objectContaining({ field: 'condition', code: 'too_big', message: `The condition exceeds the maximum of ${MAX_EXPANDED_REFERENCES} segment references after expanding referenced segments` }),
    ]);
    const ok = await createSegment(call, 'top', { logic: 'OR', groups: mids.slice(0, 2).map((m) => ({ filters: [ref(m)] })) });
    const patched = await call('PATCH', `/segments/${ok}`, { condition: tooMany });
    expect(patched.statusCode).toBe(422);
    expect(patched.json<{ error: { errors: { field: string }[] } }>().error.errors[0]?.field).toBe('condition');

    // Filters: three segments of 400 filters each are valid alone, 1,200 together.
    const big: string[] = [];
    const filters = Array.from({ length: 400 }, (_, i) => ({ field: `data.k${i}`, operator: 'exists' }));
    for (let i = 0; i < 3; i++) big.push(await createSegment(call, `big ${i}`, { logic: 'AND', groups: Array.from({ length: 4 }, (_, g) => ({ filters: filters.slice(g * 100, g * 100 + 100) })) }));
    const res = await call('POST', '/segments', { name: 'huge', condition: { logic: 'OR', groups: big.map((b) => ({ filters: [ref(b)] })) } });
    expect(res.statusCode).toBe(422);
    expect(res.json<{ error: { errors: { message: string }[] } }>().error.errors[0]?.message).toBe(
      `The condition exceeds the maximum of ${MAX_EXPANDED_FILTERS} filters after expanding referenced segments`,
    );
  });

  it('answers 422 (not 500, not a long query) when reading a segment stored before the limits, or with a cycle', async () => {
    const { project } = await newProject(t.app);
    const call = caller(project);
    const leaf = await createSegment(call, 'leaf', PRO);
    const mids: string[] = [];
    for (let i = 0; i < 6; i++) mids.push(await createSegment(call, `mid ${i}`, { logic: 'OR', groups: [{ filters: Array.from({ length: 20 }, () => ref(leaf)) }] }));
    const stored = async (name: string, condition: object) =>
      (await t.db.db.insertInto('segments').values({ project_id: project.id, name, type: 'DYNAMIC', condition: JSON.stringify(condition) }).returning('id').executeTakeFirstOrThrow()).id;
    const old = await stored('old', { logic: 'OR', groups: mids.map((m) => ({ filters: [ref(m)] })) });
    for (const url of [`/segments/${old}/contacts`, `/segments/${old}/refresh`]) {
      const res = await call(url.endsWith('contacts') ? 'GET' : 'POST', url);
      expect(res.statusCode, url).toBe(422);
      expect(res.json<{ error: { errors: { field: string; code: string }[] } }>().error.errors[0]).toMatchObject({ field: 'condition', code: 'too_big' });
    }
    // A cycle written behind validation's back (two PATCHes racing could do it): refused, never looped.
    const a = await stored('a', PRO);
    const b = await stored('b', { logic: 'AND', groups: [{ filters: [ref(a)] }] });
    await t.db.db.updateTable('segments').set({ condition: JSON.stringify({ logic: 'AND', groups: [{ filters: [ref(b)] }] }) }).where('id', '=', a).execute();
    const cyclic = await call('GET', `/segments/${a}/contacts`);
    expect(cyclic.statusCode).toBe(422);
    expect(cyclic.json<{ error: { errors: { code: string }[] } }>().error.errors[0]?.code).toBe('segment_cycle');
  });
});
