import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { templateClient } from './helpers.js';

let t: TestApp;
let c: ReturnType<typeof templateClient>;
beforeAll(async () => {
  t = await createTestApp();
  c = templateClient(t);
});
afterAll(() => t?.close());

type Type = 'TRANSACTIONAL' | 'MARKETING' | 'HEADLESS';
interface Seed {
  name?: string;
  description?: string;
  subject?: string;
  type?: Type;
  /** Seconds after a fixed base time (default: the index), so createdAt orders are known. */
  at?: number;
  /** updated_at in seconds after the base (default: same as created). */
  updatedAt?: number;
}

const BASE = Date.parse('2030-01-01T00:00:00.000Z');

/** Fixture templates in one statement, named t00, t01… unless named; returns their ids in input order. */
async function seed(projectId: string, items: Seed[]): Promise<string[]> {
  const rows = await t.db.db
    .insertInto('templates')
    .values(
      items.map((s, i) => ({
        project_id: projectId,
        name: s.name ?? `t${String(i).padStart(2, '0')}`,
        description: s.description ?? '',
        subject: s.subject ?? '',
        from_email: 'a@example.com',
        type: s.type ?? 'MARKETING',
        created_at: new Date(BASE + (s.at ?? i) * 1000),
        updated_at: new Date(BASE + (s.updatedAt ?? s.at ?? i) * 1000),
      })),
    )
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

const names = async (p: TestProject, query: string) => (await c.list(p, query)).data.map((d) => d.name);
const fresh = async () => (await newProject(t.app)).project;

describe('GET /templates: pages', () => {
  it('answers a page list, newest first, with page 1 and pageSize 20 by default', async () => {
    const project = await fresh();
    await seed(project.id, Array.from({ length: 25 }, () => ({})));
    const body = await c.list(project);
    expect(body).toMatchObject({ page: 1, pageSize: 20, total: 25, totalPages: 2 });
    expect(body.data.map((d) => d.name)).toEqual(Array.from({ length: 20 }, (_, i) => `t${String(24 - i).padStart(2, '0')}`));
    expect(body.data[0]).toEqual({
      id: expect.any(String),
      name: 't24',
      description: '',
      subject: '',
      body: '',
      from: 'a@example.com',
      fromName: null,
      replyTo: null,
      type: 'MARKETING',
      projectId: project.id,
      createdAt: '2030-01-01T00:00:24.000Z',
      updatedAt: '2030-01-01T00:00:24.000Z',
    });
  });

  it('walks every template exactly once, ties on createdAt broken by id', async () => {
    const project = await fresh();
    const ids = await seed(project.id, Array.from({ length: 23 }, (_, i) => ({ at: Math.floor(i / 5) })));
    const seen: string[] = [];
    for (let page = 1; page <= 5; page++) {
      const body = await c.list(project, `?page=${page}&pageSize=5`);
      expect(body).toMatchObject({ page, pageSize: 5, total: 23, totalPages: 5 });
      seen.push(...body.data.map((d) => d.id));
    }
    expect(seen).toHaveLength(23);
    expect(new Set(seen).size).toBe(23);
    const expected = [...ids].sort((a, b) => (Math.floor(ids.indexOf(b) / 5) - Math.floor(ids.indexOf(a) / 5)) || (a < b ? 1 : -1));
    expect(seen).toEqual(expected);
    expect(await c.list(project, '?page=1&pageSize=5&dir=asc').then((b) => b.data.map((d) => d.id))).toEqual([...expected].reverse().slice(0, 5));
  });

  it('clamps pageSize above 100 to 100', async () => {
    const project = await fresh();
    await seed(project.id, Array.from({ length: 105 }, () => ({})));
    for (const size of ['101', '500', '1000000']) {
      const body = await c.list(project, `?pageSize=${size}`);
      expect(body).toMatchObject({ pageSize: 100, total: 105, totalPages: 2 });
      expect(body.data).toHaveLength(100);
    }
    expect((await c.list(project, '?pageSize=100&page=2')).data).toHaveLength(5);
  });

  it('answers an empty page past the last one, with the real total', async () => {
    const project = await fresh();
    await seed(project.id, [{}, {}, {}]);
    expect(await c.list(project, '?page=7&pageSize=2')).toEqual({ data: [], page: 7, pageSize: 2, total: 3, totalPages: 2 });
    expect(await c.list(await fresh())).toEqual({ data: [], page: 1, pageSize: 20, total: 0, totalPages: 0 });
  });

  it.each([
    ['page', 'page=0'],
    ['page', 'page=-1'],
    ['page', 'page=1.5'],
    ['page', 'page=abc'],
    ['pageSize', 'pageSize=0'],
    ['pageSize', 'pageSize=2.5'],
    ['pageSize', 'pageSize=ten'],
    ['type', 'type=NEWSLETTER'],
    ['type', 'type=marketing'],
  ])('answers 422 on field %s for ?%s', async (field, query) => {
    const project = await fresh();
    const error = expectEnvelope(await c.call(project, 'GET', `/templates?${query}`), 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field })]);
  });

  it('lists only the project\'s own templates', async () => {
    const project = await fresh();
    const other = await fresh();
    await seed(project.id, [{ name: 'mine' }]);
    await seed(other.id, [{ name: 'theirs' }, { name: 'theirs too' }]);
    expect(await c.list(project)).toMatchObject({ total: 1, data: [{ name: 'mine', projectId: project.id }] });
  });
});

describe('GET /templates: filters', () => {
  it('filters by type, counting only matches', async () => {
    const project = await fresh();
    await seed(project.id, [{ type: 'TRANSACTIONAL' }, { type: 'MARKETING' }, { type: 'HEADLESS' }, { type: 'TRANSACTIONAL' }]);
    const body = await c.list(project, '?type=TRANSACTIONAL');
    expect(body).toMatchObject({ total: 2, totalPages: 1 });
    expect(body.data.map((d) => d.name)).toEqual(['t03', 't00']);
    expect(await names(project, '?type=HEADLESS')).toEqual(['t02']);
  });

  it('searches name, description and subject case-insensitively', async () => {
    const project = await fresh();
    await seed(project.id, [
      { name: 'Welcome Email' },
      { name: 'x1', description: 'sent on WELCOME' },
      { name: 'x2', subject: 'A warm welcome, {{name}}' },
      { name: 'Receipt', description: 'billing', subject: 'Your receipt' },
    ]);
    expect(await names(project, '?search=welcome')).toEqual(['x2', 'x1', 'Welcome Email']);
    const body = await c.list(project, '?search=WeLcOmE&pageSize=2');
    expect(body).toMatchObject({ total: 3, totalPages: 2 });
    expect(await names(project, '?search=nothing-like-this')).toEqual([]);
    expect(await names(project, '?search=%20%20')).toHaveLength(4);
  });

  it('matches %, _ and \\ literally', async () => {
    const project = await fresh();
    await seed(project.id, [{ name: '100% off' }, { name: '100 off' }, { name: 'a_b' }, { name: 'axb' }, { name: 'back\\slash' }]);
    expect(await names(project, `?search=${encodeURIComponent('100%')}`)).toEqual(['100% off']);
    expect(await names(project, '?search=a_b')).toEqual(['a_b']);
    expect(await names(project, `?search=${encodeURIComponent('k\\s')}`)).toEqual(['back\\slash']);
  });

  it('combines type and search', async () => {
    const project = await fresh();
    await seed(project.id, [{ name: 'promo a', type: 'MARKETING' }, { name: 'promo b', type: 'TRANSACTIONAL' }, { name: 'other', type: 'MARKETING' }]);
    expect(await c.list(project, '?type=MARKETING&search=promo')).toMatchObject({ total: 1, data: [{ name: 'promo a' }] });
  });
});

describe('GET /templates: sort and dir', () => {
  it('sorts by name case-insensitively, with dir', async () => {
    const project = await fresh();
    await seed(project.id, [{ name: 'banana' }, { name: 'Apple' }, { name: 'cherry' }, { name: 'apricot' }]);
    expect(await names(project, '?sort=name&dir=asc')).toEqual(['Apple', 'apricot', 'banana', 'cherry']);
    expect(await names(project, '?sort=name')).toEqual(['cherry', 'banana', 'apricot', 'Apple']);
  });

  it('sorts by updatedAt', async () => {
    const project = await fresh();
    await seed(project.id, [{ name: 'a', updatedAt: 50 }, { name: 'b', updatedAt: 10 }, { name: 'c', updatedAt: 30 }]);
    expect(await names(project, '?sort=updatedAt')).toEqual(['a', 'c', 'b']);
    expect(await names(project, '?sort=updatedAt&dir=asc')).toEqual(['b', 'c', 'a']);
  });

  it('falls back to createdAt for an unrecognised sort and to desc for an unrecognised dir', async () => {
    const project = await fresh();
    await seed(project.id, [{ name: 'b' }, { name: 'a' }, { name: 'c' }]);
    const byCreatedDesc = ['c', 'a', 'b'];
    expect(await names(project, '')).toEqual(byCreatedDesc);
    expect(await names(project, '?sort=email')).toEqual(byCreatedDesc);
    expect(await names(project, '?sort=NAME')).toEqual(byCreatedDesc);
    expect(await names(project, '?sort=name&dir=sideways')).toEqual(['c', 'b', 'a']);
    expect(await names(project, '?sort=bogus&dir=asc')).toEqual(['b', 'a', 'c']);
    expect(await names(project, '?dir=ASC')).toEqual(byCreatedDesc);
  });
});
