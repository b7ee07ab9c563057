import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { get, track } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** Tracks one after another (each its own transaction, so created_at grows). Returns the event ids. */
async function trackAll(project: TestProject, calls: { email: string; event: string; data?: object; subscribed?: boolean }[]): Promise<string[]> {
  const ids: string[] = [];
  for (const call of calls) {
    const res = await track(t.app, project, call);
    expect(res.statusCode, res.body).toBe(200);
    ids.push(res.json().data.event);
  }
  return ids;
}

const del = (project: TestProject, name: string) => t.app.inject({ method: 'DELETE', url: `/events/${encodeURIComponent(name)}`, headers: bearer(project.secret) });
const namesOf = async (projectId: string) =>
  (await t.db.db.selectFrom('events').select('name').where('project_id', '=', projectId).execute()).map((r) => r.name).sort();

describe('GET /events', () => {
  it('lists events newest first with their contact, as a cursor list with total on the first page only', async () => {
    const { project } = await newProject(t.app);
    const ids = await trackAll(
      project,
      Array.from({ length: 5 }, (_, i) => ({ email: `l${i % 2}@example.com`, event: i % 2 ? 'odd' : 'even', data: { i } })),
    );
    const first = await get(t.app, project, '/events?limit=2');
    expect(first.statusCode, first.body).toBe(200);
    const page1 = first.json();
    expect(page1).toMatchObject({ hasMore: true, total: 5, cursor: expect.any(String) });
    expect(page1.data.map((e: { id: string }) => e.id)).toEqual([ids[4], ids[3]]);
    expect(page1.data[0]).toEqual({
      id: ids[4],
      contactId: expect.any(String),
      email: 'l0@example.com',
      name: 'even',
      data: { i: 4 },
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });

    const page2 = (await get(t.app, project, `/events?limit=2&cursor=${page1.cursor}`)).json();
    expect(page2).toMatchObject({ hasMore: true, total: 0 });
    expect(page2.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    const page3 = (await get(t.app, project, `/events?limit=2&cursor=${page2.cursor}`)).json();
    expect(page3).toEqual({ data: [expect.objectContaining({ id: ids[0] })], cursor: null, hasMore: false, total: 0 });
  });

  it('pages through events sharing one timestamp without losing or repeating any', async () => {
    const { project } = await newProject(t.app);
    // Concurrent calls share a few transactions, hence created_at values: the id breaks the ties.
    await Promise.all(Array.from({ length: 60 }, (_, i) => track(t.app, project, { email: `s${i}@example.com`, event: 'burst' })));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(t.app, project, `/events?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      const body: { data: { id: string }[]; cursor: string | null } = res.json();
      seen.push(...body.data.map((e) => e.id));
      cursor = body.cursor;
    } while (cursor);
    expect(seen).toHaveLength(60);
    expect(new Set(seen).size).toBe(60);
  });

  it('filters by name and by contactId', async () => {
    const { project } = await newProject(t.app);
    await trackAll(project, [
      { email: 'f1@example.com', event: 'a' },
      { email: 'f2@example.com', event: 'b' },
      { email: 'f1@example.com', event: 'b' },
    ]);
    const byName = (await get(t.app, project, '/events?name=b')).json();
    expect(byName.total).toBe(2);
    expect(byName.data.map((e: { email: string }) => e.email)).toEqual(['f1@example.com', 'f2@example.com']);
    const contactId = byName.data[0].contactId;
    const byContact = (await get(t.app, project, `/events?contactId=${contactId}`)).json();
    expect(byContact.data.map((e: { name: string }) => e.name)).toEqual(['b', 'a']);
    const both = (await get(t.app, project, `/events?contactId=${contactId}&name=a`)).json();
    expect(both).toMatchObject({ total: 1, hasMore: false });
  });

  it('clamps limit to 100 and refuses a bad limit, cursor or contactId with 422', async () => {
    const { project } = await newProject(t.app);
    const [id] = await trackAll(project, [{ email: 'many@example.com', event: 'seed' }]);
    const contact = (await t.db.db.selectFrom('events').select('contact_id').where('id', '=', id ?? '').executeTakeFirstOrThrow()).contact_id;
    await sql`INSERT INTO events (project_id, contact_id, name) SELECT ${project.id}, ${contact}, 'bulk' FROM generate_series(1, 104)`.execute(t.db.db);
    const clamped = (await get(t.app, project, '/events?limit=500')).json();
    expect(clamped.data).toHaveLength(100);
    expect(clamped).toMatchObject({ hasMore: true, total: 105 });

    for (const [query, field] of [
      ['limit=0', 'limit'],
      ['limit=abc', 'limit'],
      ['cursor=garbage', 'cursor'],
      [`cursor=${Buffer.from(`2026-02-30T00:00:00.000000Z|${randomUUID()}`).toString('base64url')}`, 'cursor'],
      ['contactId=not-a-uuid', 'contactId'],
    ]) {
      const res = await get(t.app, project, `/events?${query}`);
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors, query).toEqual([expect.objectContaining({ field })]);
    }
  });
});

describe('GET /events/contact/:contactId', () => {
  it('lists the events of one contact, including its subscription events', async () => {
    const { project } = await newProject(t.app);
    await trackAll(project, [
      { email: 'one@example.com', event: 'a' },
      { email: 'two@example.com', event: 'b' },
      { email: 'one@example.com', event: 'c', subscribed: false },
    ]);
    const contact = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', project.id).where('email', '=', 'one@example.com').executeTakeFirstOrThrow();
    const res = await get(t.app, project, `/events/contact/${contact.id}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ total: 3, hasMore: false, cursor: null });
    expect(body.data.map((e: { name: string }) => e.name).sort()).toEqual(['a', 'c', 'contact.unsubscribed']);
    expect(body.data.every((e: { contactId: string }) => e.contactId === contact.id)).toBe(true);
  });

  it('is 404 for an unknown, malformed or other project’s contact', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    await trackAll(a.project, [{ email: 'mine@example.com', event: 'x' }]);
    const contact = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', a.project.id).executeTakeFirstOrThrow();
    for (const id of [randomUUID(), 'not-a-uuid', contact.id]) {
      expectEnvelope(await get(t.app, b.project, `/events/contact/${id}`), 404, 'NOT_FOUND');
    }
  });
});

describe('GET /events/names and /events/stats', () => {
  it('lists distinct names with counts, last seen and the system flag', async () => {
    const { project } = await newProject(t.app);
    await trackAll(project, [
      { email: 'n@example.com', event: 'login' },
      { email: 'n@example.com', event: 'login' },
      { email: 'n@example.com', event: 'purchase', subscribed: false },
    ]);
    const res = await get(t.app, project, '/events/names');
    expect(res.statusCode, res.body).toBe(200);
    const { data } = res.json();
    expect(data.map((n: { name: string }) => n.name).sort()).toEqual(['contact.unsubscribed', 'login', 'purchase']);
    const byName = Object.fromEntries(data.map((n: { name: string }) => [n.name, n]));
    expect(byName.login).toEqual({ name: 'login', count: 2, lastSeenAt: expect.any(String), system: false });
    expect(byName['contact.unsubscribed']).toMatchObject({ count: 1, system: true });
    expect(Date.parse(byName.purchase.lastSeenAt)).toBeGreaterThan(Date.parse(byName.login.lastSeenAt));
  });

  it('counts per name over 24 h, 7 d, 30 d and all time, with a zero-filled daily series on request', async () => {
    const { project } = await newProject(t.app);
    await trackAll(project, Array.from({ length: 5 }, () => ({ email: 'st@example.com', event: 'visit' })));
    await trackAll(project, [{ email: 'st@example.com', event: 'other' }]);
    const rows = await t.db.db.selectFrom('events').select('id').where('project_id', '=', project.id).where('name', '=', 'visit').orderBy('id').execute();
    const ages = ['2 days', '10 days', '40 days', '40 days'];
    for (const [i, age] of ages.entries()) {
      await sql`UPDATE events SET created_at = now() - ${age}::interval WHERE id = ${rows[i]?.id ?? ''}`.execute(t.db.db);
    }
    const plain = (await get(t.app, project, '/events/stats')).json();
    expect(plain.data).toEqual([
      { name: 'visit', system: false, last24h: 1, last7d: 2, last30d: 3, total: 5 },
      { name: 'other', system: false, last24h: 1, last7d: 1, last30d: 1, total: 1 },
    ]);

    const series = (await get(t.app, project, '/events/stats?days=4&name=visit')).json();
    expect(series.data).toHaveLength(1);
    const daily: { date: string; count: number }[] = series.data[0].daily;
    expect(daily).toHaveLength(4);
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    expect(daily.map((d) => d.date)).toEqual([day(3), day(2), day(1), day(0)]);
    expect(daily.map((d) => d.count)).toEqual([0, 1, 0, 1]);

    expect((await get(t.app, project, '/events/stats?days=9999')).json().data[0].daily).toHaveLength(365);
    expectEnvelope(await get(t.app, project, '/events/stats?days=0'), 422, 'VALIDATION_ERROR');
  });
});

describe('GET /events/:eventName/usage and DELETE /events/:eventName', () => {
  it('answers the usage lists of a name (empty until segments, campaigns and workflows exist)', async () => {
    const { project } = await newProject(t.app);
    const res = await get(t.app, project, '/events/signed%20up/usage');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ eventName: 'signed up', segments: [], campaigns: [], workflows: [] });
  });

  it('deletes every event of the name in this project only, with 204', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    await trackAll(a.project, [
      { email: 'x@example.com', event: 'page/view' },
      { email: 'y@example.com', event: 'page/view' },
      { email: 'x@example.com', event: 'keep' },
    ]);
    await trackAll(b.project, [{ email: 'x@example.com', event: 'page/view' }]);
    const res = await del(a.project, 'page/view');
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(await namesOf(a.project.id)).toEqual(['keep']);
    expect(await namesOf(b.project.id)).toEqual(['page/view']);
    expect((await del(a.project, 'never-tracked')).statusCode).toBe(204);
  });

  it('refuses the service’s own names with 422 reserved_event', async () => {
    const { project } = await newProject(t.app);
    await trackAll(project, [{ email: 'z@example.com', event: 'x', subscribed: false }, { email: 'z@example.com', event: 'x', subscribed: true }]);
    for (const name of ['email.open', 'contact.subscribed', 'contact.unsubscribed', 'contact.anything', 'segment.vip-users.entry', 'segment.x.exit']) {
      const error = expectEnvelope(await del(project, name), 422, 'VALIDATION_ERROR');
      expect(error.errors, name).toEqual([expect.objectContaining({ field: 'eventName', code: 'reserved_event' })]);
    }
    expect(await namesOf(project.id)).toEqual(['contact.subscribed', 'x', 'x']);
  });
});

describe('project isolation', () => {
  it('shows no event, name or count of another project', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    await trackAll(a.project, [{ email: 'secret@example.com', event: 'private' }]);
    const contact = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', a.project.id).executeTakeFirstOrThrow();
    expect((await get(t.app, b.project, '/events')).json()).toEqual({ data: [], cursor: null, hasMore: false, total: 0 });
    expect((await get(t.app, b.project, `/events?contactId=${contact.id}`)).json()).toMatchObject({ data: [], total: 0 });
    expect((await get(t.app, b.project, '/events/names')).json()).toEqual({ data: [] });
    expect((await get(t.app, b.project, '/events/stats?days=3')).json()).toEqual({ data: [] });
    // A cursor made in project A leads nowhere in project B.
    await trackAll(a.project, [{ email: 'secret@example.com', event: 'private' }]);
    const cursor = (await get(t.app, a.project, '/events?limit=1')).json().cursor;
    expect((await get(t.app, b.project, `/events?cursor=${cursor}`)).json().data).toEqual([]);
  });
});
