import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileCondition, type ConditionTree, validateCondition } from '../../src/conditions/index.js';
import type { Filter } from '../../src/conditions/tree.js';
import { newProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { seedPeople } from './fixtures.js';

let t: TestApp;
let projectId: string;
let otherProjectId: string;
beforeAll(async () => {
  t = await createTestApp();
  projectId = (await newProject(t.app)).project.id;
  otherProjectId = (await newProject(t.app)).project.id;
  await seedPeople(t.db, projectId);
  await seedPeople(t.db, otherProjectId); // same people elsewhere: must never leak in
});
afterAll(() => t.close());

/** Local parts of the project's contacts matching the (validated) tree, sorted. */
async function match(tree: unknown, pid = projectId): Promise<string[]> {
  const valid = await validateCondition(t.db.db, pid, tree, 'condition');
  const where = await compileCondition(t.db.db, pid, valid);
  const { rows } = await sql<{ email: string }>`SELECT c.email FROM contacts c WHERE c.project_id = ${pid}::uuid AND ${where}`.execute(t.db.db);
  return rows.map((r) => r.email.split('@')[0] ?? '').sort();
}
const one = (filter: Filter) => match({ logic: 'AND', groups: [{ filters: [filter] }] });
const ALL = ['alice', 'bob', 'carol', 'dave', 'eve', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'ken', 'liz'];
const without = (...names: string[]) => ALL.filter((n) => !names.includes(n));

describe('contact fields', () => {
  it('email equals (case-insensitive input), contains and notContains', async () => {
    const all = await one({ field: 'email', operator: 'contains', value: 'ALI' });
    expect(all).toEqual(['alice']);
    expect(await one({ field: 'email', operator: 'notContains', value: 'Ali' })).toEqual(without('alice'));
    expect(await one({ field: 'email', operator: 'contains', value: '%' })).toEqual([]); // wildcards are literal
  });
  it('subscribed equals / notEquals', async () => {
    expect(await one({ field: 'subscribed', operator: 'equals', value: false })).toEqual(['bob', 'ivan']);
    expect(await one({ field: 'subscribed', operator: 'notEquals', value: false })).toEqual(without('bob', 'ivan'));
  });
  it('createdAt within / olderThan / compare with ISO dates', async () => {
    expect(await one({ field: 'createdAt', operator: 'olderThan', value: 3, unit: 'days' })).toEqual(['dave', 'grace']);
    expect(await one({ field: 'createdAt', operator: 'within', value: 2, unit: 'days' })).toEqual(without('dave', 'grace'));
    const tenDaysAgo = new Date(Date.now() - 10 * 86_400_000).toISOString();
    expect(await one({ field: 'createdAt', operator: 'lessThan', value: tenDaysAgo })).toEqual(['dave']);
    expect(await one({ field: 'updatedAt', operator: 'greaterThanOrEqual', value: tenDaysAgo })).toEqual(without('dave'));
  });
});

describe('data fields', () => {
  it('equals matches a number and its numeric-string form both ways, and is case-sensitive', async () => {
    expect(await one({ field: 'data.age', operator: 'equals', value: 30 })).toEqual(['alice', 'ivan']);
    expect(await one({ field: 'data.age', operator: 'equals', value: '25' })).toEqual(['bob']);
    expect(await one({ field: 'data.plan', operator: 'equals', value: 'pro' })).toEqual(['alice', 'ivan']);
    expect(await one({ field: 'data.vip', operator: 'equals', value: true })).toEqual(['carol', 'frank']);
    expect(await one({ field: 'data.flag', operator: 'equals', value: false })).toEqual(['liz']);
  });
  it('notEquals, notContains and notExists match contacts lacking the key', async () => {
    expect(await one({ field: 'data.plan', operator: 'notEquals', value: 'pro' })).toEqual(without('alice', 'ivan'));
    expect(await one({ field: 'data.city', operator: 'notContains', value: 'BERLIN' })).toEqual(without('alice', 'bob', 'ken'));
    expect(await one({ field: 'data.plan', operator: 'notExists' })).toEqual(['dave', 'eve', 'frank', 'grace', 'heidi', 'judy', 'liz']);
  });
  it('contains is case-insensitive; exists', async () => {
    expect(await one({ field: 'data.city', operator: 'contains', value: 'BERLIN' })).toEqual(['alice', 'bob', 'ken']);
    expect(await one({ field: 'data.score', operator: 'contains', value: 42 })).toEqual(['alice', 'eve', 'judy']);
    expect(await one({ field: 'data.vip', operator: 'exists' })).toEqual(['carol', 'frank']);
  });
  it('compares numbers numerically across numbers and numeric strings; non-numeric values never match', async () => {
    expect(await one({ field: 'data.age', operator: 'greaterThan', value: 25 })).toEqual(['alice', 'carol', 'ivan']);
    expect(await one({ field: 'data.age', operator: 'greaterThanOrEqual', value: '25' })).toEqual(['alice', 'bob', 'carol', 'ivan']);
    expect(await one({ field: 'data.age', operator: 'lessThan', value: 20 })).toEqual(['grace', 'judy']);
    expect(await one({ field: 'data.score', operator: 'lessThanOrEqual', value: 42 })).toEqual(['alice', 'eve', 'judy']);
  });
  it('compares ISO date strings as dates; within/olderThan on data dates', async () => {
    expect(await one({ field: 'data.signup', operator: 'greaterThan', value: '2024-06-01' })).toEqual(['frank']);
    expect(await one({ field: 'data.signup', operator: 'lessThan', value: '2030-01-01T00:00:00Z' })).toEqual(['alice', 'frank']);
    expect(await one({ field: 'data.signup', operator: 'olderThan', value: 30, unit: 'days' })).toEqual(['alice', 'frank']);
    expect(await one({ field: 'data.signup', operator: 'within', value: 30, unit: 'days' })).toEqual([]);
  });
  it('binds values: SQL in a value is just text', async () => {
    const evil = "'; DROP TABLE contacts; --";
    expect(await one({ field: 'data.nickname', operator: 'equals', value: evil })).toEqual(['heidi']);
    expect(await one({ field: "data.x'); DROP TABLE contacts; --", operator: 'exists' })).toEqual([]);
    expect(await one({ field: 'data.nickname', operator: 'contains', value: "'; drop" })).toEqual(['heidi']);
    expect((await sql<{ n: string }>`SELECT count(*) AS n FROM contacts`.execute(t.db.db)).rows[0]?.n).toBeDefined();
  });
});

describe('event and email fields', () => {
  it('triggered / notTriggered', async () => {
    expect(await one({ field: 'event.purchase', operator: 'triggered' })).toEqual(['alice', 'bob', 'grace']);
    expect(await one({ field: 'event.purchase', operator: 'notTriggered' })).toEqual(without('alice', 'bob', 'grace'));
    expect(await one({ field: 'event.Signed Up', operator: 'triggered' })).toEqual(['ivan']);
  });
  it('triggeredWithin / triggeredOlderThan / notTriggeredWithin', async () => {
    expect(await one({ field: 'event.purchase', operator: 'triggeredWithin', value: 7, unit: 'days' })).toEqual(['alice']);
    expect(await one({ field: 'event.purchase', operator: 'triggeredWithin', value: 12, unit: 'hours' })).toEqual(['alice']);
    expect(await one({ field: 'event.purchase', operator: 'triggeredOlderThan', value: 7, unit: 'days' })).toEqual(['bob', 'grace']);
    expect(await one({ field: 'event.login', operator: 'notTriggeredWithin', value: 30, unit: 'minutes' })).toEqual(without('eve'));
  });
  it('email milestones mean an email with that timestamp set', async () => {
    expect(await one({ field: 'email.sent', operator: 'triggered' })).toEqual(['alice', 'carol', 'frank', 'ken']);
    expect(await one({ field: 'email.opened', operator: 'triggered' })).toEqual(['alice']);
    expect(await one({ field: 'email.bounced', operator: 'triggeredWithin', value: 1, unit: 'days' })).toEqual([]);
    expect(await one({ field: 'email.bounced', operator: 'triggeredOlderThan', value: 1, unit: 'days' })).toEqual(['carol']);
    expect(await one({ field: 'email.sent', operator: 'notTriggeredWithin', value: 7, unit: 'days' })).toEqual(without('alice', 'carol', 'ken'));
    expect(await one({ field: 'email.clicked', operator: 'notTriggered' })).toEqual(without('ken'));
  });
});

describe('tree logic', () => {
  it('AND within a group, OR between groups, nested trees, empty tree and groups match everyone', async () => {
    const tree: ConditionTree = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'subscribed', operator: 'equals', value: true }] },
        {
          filters: [{ field: 'event.purchase', operator: 'triggered' }],
          conditions: { logic: 'OR', groups: [{ filters: [{ field: 'subscribed', operator: 'equals', value: false }] }, { filters: [{ field: 'data.age', operator: 'lessThan', value: 20 }] }] },
        },
      ],
    };
    expect(await match(tree)).toEqual(['alice', 'bob', 'grace']);
    expect(await match({ ...tree, logic: 'AND' })).toEqual([]);
    expect(await match({ logic: 'AND', groups: [] })).toEqual(ALL);
    expect(await match({ logic: 'OR', groups: [{ filters: [] }] })).toEqual(ALL);
  });
  it('never matches contacts of another project', async () => {
    expect(await match({ logic: 'AND', groups: [] }, otherProjectId)).toHaveLength(ALL.length);
    const where = await compileCondition(t.db.db, projectId, { logic: 'AND', groups: [{ filters: [{ field: 'event.purchase', operator: 'triggered' }] }] });
    const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${otherProjectId}::uuid AND ${where}`.execute(t.db.db);
    expect(Number(rows[0]?.n)).toBe(0);
  });
});
