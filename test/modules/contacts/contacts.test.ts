import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

interface ContactJson {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
  _meta?: { isNew: boolean; isUpdate: boolean };
}
interface ListJson {
  data: ContactJson[];
  cursor: string | null;
  hasMore: boolean;
  total: number;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const call = (p: TestProject, method: Method, url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });
const create = async (p: TestProject, payload: object): Promise<ContactJson> => {
  const res = await call(p, 'POST', '/contacts', payload);
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json<ContactJson>();
};
const list = async (p: TestProject, query = ''): Promise<ListJson> => {
  const res = await call(p, 'GET', `/contacts${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json<ListJson>();
};
const rowOf = (id: string) => t.db.db.selectFrom('contacts').selectAll().where('id', '=', id).executeTakeFirst();
const eventNames = async (contactId: string) =>
  (await t.db.db.selectFrom('events').select('name').where('contact_id', '=', contactId).orderBy('created_at').orderBy('id').execute()).map(
    (e) => e.name,
  );
/** Fixture contacts in one statement (so they share created_at: the id breaks the tie). */
const seed = async (projectId: string, emails: string[], subscribed = (_i: number) => true) =>
  t.db.db
    .insertInto('contacts')
    .values(emails.map((email, i) => ({ project_id: projectId, email, subscribed: subscribed(i) })))
    .returning(['id', 'email'])
    .execute();
/** Every page of a walk (limit 7 unless given), following cursors. */
async function walk(p: TestProject, query: string, between?: () => Promise<void>): Promise<{ pages: ListJson[]; ids: string[] }> {
  const pages: ListJson[] = [];
  let cursor: string | null = null;
  do {
    const page = await list(p, `?limit=7${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    pages.push(page);
    cursor = page.cursor;
    await between?.();
  } while (cursor);
  return { pages, ids: pages.flatMap((pg) => pg.data.map((c) => c.id)) };
}

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('POST /contacts', () => {
  it('creates a subscribed contact with 201 and _meta {isNew: true}, storing the email lower-cased', async () => {
    const { project } = await newProject(t.app);
    const res = await call(project, 'POST', '/contacts', { email: ' Ada@Example.COM ', data: { plan: 'pro' } });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json<ContactJson>();
    expect(body).toEqual({
      id: expect.any(String),
      email: 'ada@example.com',
      subscribed: true,
      data: { plan: 'pro' },
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: expect.stringMatching(ISO_MS),
      _meta: { isNew: true, isUpdate: false },
    });
    expect(await rowOf(body.id)).toMatchObject({ project_id: project.id, email: 'ada@example.com', subscribed: true, data: { plan: 'pro' } });
  });

  it('answers 200 with _meta {isUpdate: true} for an existing email in any case, keeping subscription unless given', async () => {
    const { project } = await newProject(t.app);
    const first = await create(project, { email: 'grace@example.com', subscribed: false, data: { a: 1 } });
    expect(first.subscribed).toBe(false);
    const res = await call(project, 'POST', '/contacts', { email: 'GRACE@Example.com', data: { b: 'x' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: first.id, subscribed: false, data: { a: 1, b: 'x' }, _meta: { isNew: false, isUpdate: true } });
    const resub = await call(project, 'POST', '/contacts', { email: 'grace@example.com', subscribed: true });
    expect(resub.statusCode).toBe(200);
    expect(resub.json().subscribed).toBe(true);
    const rows = await t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', project.id).execute();
    expect(rows.map((r) => [r.email, r.subscribed])).toEqual([['grace@example.com', true]]);
  });

  it.each([{}, { email: null }, { email: '' }, { email: '   ' }, { subscribed: true, data: { a: 1 } }])(
    'answers the legacy 400 {error} when email is missing: %j',
    async (payload) => {
      const { project } = await newProject(t.app);
      const res = await call(project, 'POST', '/contacts', payload);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: 'Email is required' });
      expect(await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', project.id).execute()).toEqual([]);
    },
  );

  it('answers 422 invalid_string for a malformed email, and invalid_type for a non-boolean subscribed', async () => {
    const { project } = await newProject(t.app);
    const bad = expectEnvelope(await call(project, 'POST', '/contacts', { email: 'not-an-email' }), 422, 'VALIDATION_ERROR');
    expect(bad.errors).toEqual([expect.objectContaining({ field: 'email', code: 'invalid_string' })]);
    const sub = expectEnvelope(await call(project, 'POST', '/contacts', { email: 'a@example.com', subscribed: 'yes' }), 422, 'VALIDATION_ERROR');
    expect(sub.errors).toEqual([expect.objectContaining({ field: 'subscribed', code: 'invalid_type' })]);
  });
});

/** Writes `data` to a contact holding {keep: 'k', drop: 'd'} through POST or PATCH. */
const writers = {
  POST: async (p: TestProject, c: ContactJson, data: unknown) => call(p, 'POST', '/contacts', { email: c.email, data }),
  PATCH: async (p: TestProject, c: ContactJson, data: unknown) => call(p, 'PATCH', `/contacts/${c.id}`, { data }),
};

describe.each(Object.entries(writers))('data rules through %s', (_name, write) => {
  const prepare = async () => {
    const { project } = await newProject(t.app);
    return { project, contact: await create(project, { email: uniqueAddress(), data: { keep: 'k', drop: 'd' } }) };
  };

  it('stores primitives, deletes on null, ignores empty strings, and drops reserved keys', async () => {
    const { project, contact } = await prepare();
    const reserved = { id: 'x', service_id: 'x', service_email: 'x', email: 'x@example.com', unsubscribeUrl: 'x', subscribeUrl: 'x', manageUrl: 'x' };
    const res = await write(project, contact, { s: 'str', n: 42.5, yes: true, no: false, keep: '', drop: null, ...reserved });
    expect(res.statusCode, res.body).toBe(200);
    const expected = { keep: 'k', s: 'str', n: 42.5, yes: true, no: false };
    expect(res.json().data).toEqual(expected);
    expect((await rowOf(contact.id))?.data).toEqual(expected);
    expect((await rowOf(contact.id))?.email).toBe(contact.email);
  });

  it.each([{ nested: { a: 1 } }, { list: [1, 2] }, { once: { value: 'v', persistent: false } }])(
    'rejects %j with 422 and changes nothing',
    async (data) => {
      const { project, contact } = await prepare();
      const error = expectEnvelope(await write(project, contact, data), 422, 'VALIDATION_ERROR');
      expect(error.errors[0].field).toMatch(/^data\./);
      expect((await rowOf(contact.id))?.data).toEqual({ keep: 'k', drop: 'd' });
    },
  );
});

function withoutMeta(c: ContactJson | undefined): Omit<ContactJson, '_meta'> {
  if (!c) throw new Error('no contact');
  const { _meta: _ignored, ...rest } = c;
  return rest;
}

function uniqueAddress(tag = 'c'): string {
  return `${tag}-${randomUUID()}@example.com`;
}

describe('GET, PATCH and DELETE /contacts/:id', () => {
  it('returns one contact without _meta; unknown and malformed ids are 404', async () => {
    const { project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress(), data: { x: 1 } });
    const res = await call(project, 'GET', `/contacts/${c.id}`);
    expect(res.statusCode).toBe(200);
    expect(c._meta).toBeDefined();
    expect(res.json()).toEqual(withoutMeta(c));
    for (const id of [randomUUID(), 'not-a-uuid', '1234']) {
      for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
        expectEnvelope(await call(project, method, `/contacts/${id}`, method === 'PATCH' ? { subscribed: false } : undefined), 404, 'NOT_FOUND');
      }
    }
  });

  it('updates email (normalised) and subscription, and answers the contact', async () => {
    const { project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress() });
    const res = await call(project, 'PATCH', `/contacts/${c.id}`, { email: ' New@Example.com ', subscribed: false });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: c.id, email: 'new@example.com', subscribed: false });
    expect(res.json()._meta).toBeUndefined();
    expect(await rowOf(c.id)).toMatchObject({ email: 'new@example.com', subscribed: false });
    expect(new Date(res.json().updatedAt).getTime()).toBeGreaterThanOrEqual(new Date(c.updatedAt).getTime());
  });

  it('leaves a contact untouched (same updatedAt) when a PATCH changes nothing', async () => {
    const { project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress(), data: { a: 1 } });
    const res = await call(project, 'PATCH', `/contacts/${c.id}`, { email: c.email.toUpperCase(), subscribed: true, data: { a: 1, b: '' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().updatedAt).toBe(c.updatedAt);
    expect((await call(project, 'PATCH', `/contacts/${c.id}`, {})).json()).toMatchObject({ updatedAt: c.updatedAt, data: { a: 1 } });
  });

  it("answers 409 CONFLICT when the new email is another contact's (in any case) and changes nothing", async () => {
    const { project } = await newProject(t.app);
    const a = await create(project, { email: uniqueAddress('a') });
    const b = await create(project, { email: uniqueAddress('b') });
    const res = await call(project, 'PATCH', `/contacts/${b.id}`, { email: a.email.toUpperCase(), subscribed: false });
    expectEnvelope(res, 409, 'CONFLICT');
    expect(await rowOf(b.id)).toMatchObject({ email: b.email, subscribed: true });
    const bad = expectEnvelope(await call(project, 'PATCH', `/contacts/${b.id}`, { email: 'nope' }), 422, 'VALIDATION_ERROR');
    expect(bad.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
  });

  it('deletes with 204 and an empty body, taking its events with it', async () => {
    const { project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress() });
    await call(project, 'PATCH', `/contacts/${c.id}`, { subscribed: false });
    expect(await eventNames(c.id)).toEqual(['contact.unsubscribed']);
    const res = await call(project, 'DELETE', `/contacts/${c.id}`);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(await rowOf(c.id)).toBeUndefined();
    expect(await eventNames(c.id)).toEqual([]);
    expectEnvelope(await call(project, 'DELETE', `/contacts/${c.id}`), 404, 'NOT_FOUND');
  });
});

describe('subscription events', () => {
  it('records contact.unsubscribed / contact.subscribed on each change through POST and PATCH, and nothing else', async () => {
    const { project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress() });
    await create(project, { email: c.email, data: { a: 1 } }); // no subscription given: no change
    await create(project, { email: c.email, subscribed: false });
    await create(project, { email: c.email, subscribed: false }); // same value: no event
    await call(project, 'PATCH', `/contacts/${c.id}`, { subscribed: true });
    await call(project, 'PATCH', `/contacts/${c.id}`, { subscribed: true, data: { b: 2 } });
    await call(project, 'PATCH', `/contacts/${c.id}`, { subscribed: false });
    expect(await eventNames(c.id)).toEqual(['contact.unsubscribed', 'contact.subscribed', 'contact.unsubscribed']);
    const rows = await t.db.db.selectFrom('events').select('project_id').where('contact_id', '=', c.id).execute();
    expect(new Set(rows.map((r) => r.project_id))).toEqual(new Set([project.id]));
    const fresh = await create(project, { email: uniqueAddress(), subscribed: false }); // created, not changed
    expect(await eventNames(fresh.id)).toEqual([]);
  });
});

describe('GET /contacts', () => {
  it('lists newest first, 20 by default, with the total on the first page only and a null cursor at the end', async () => {
    const { project } = await newProject(t.app);
    const made: ContactJson[] = [];
    for (let i = 0; i < 23; i++) made.push(await create(project, { email: uniqueAddress(`n${i}`) }));
    const first = await list(project);
    expect(first.data.map((c) => c.id)).toEqual(made.slice(-20).reverse().map((c) => c.id));
    expect(first.data[0]).toEqual(withoutMeta(made[22]));
    expect(first).toMatchObject({ hasMore: true, total: 23, cursor: expect.any(String) });
    const second = await list(project, `?cursor=${encodeURIComponent(first.cursor ?? '')}`);
    expect(second.data.map((c) => c.id)).toEqual(made.slice(0, 3).reverse().map((c) => c.id));
    expect(second).toMatchObject({ hasMore: false, total: 0, cursor: null });
    expect(await list(project, '?cursor=')).toMatchObject({ total: 23 }); // an empty cursor is the first page
  });

  it('clamps limit to 100 and answers 422 on field limit below 1 or not an integer', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, Array.from({ length: 105 }, () => uniqueAddress()));
    const page = await list(project, '?limit=500');
    expect(page.data).toHaveLength(100);
    expect(page).toMatchObject({ hasMore: true, total: 105 });
    expect((await list(project, '?limit=100')).data).toHaveLength(100);
    for (const limit of ['0', '-1', '1.5', 'abc', '']) {
      const error = expectEnvelope(await call(project, 'GET', `/contacts?limit=${limit}`), 422, 'VALIDATION_ERROR');
      expect(error.errors[0].field).toBe('limit');
    }
  });

  it('sorts by createdAt or email in either direction; unrecognised sort and dir fall back to createdAt desc', async () => {
    const { project } = await newProject(t.app);
    const made: ContactJson[] = [];
    for (const tag of ['m', 'z', 'a', 'q']) made.push(await create(project, { email: uniqueAddress(tag) }));
    const ids = async (query: string) => (await list(project, query)).data.map((c) => c.email[0]);
    expect(await ids('')).toEqual(['q', 'a', 'z', 'm']);
    expect(await ids('?sort=createdAt&dir=asc')).toEqual(['m', 'z', 'a', 'q']);
    expect(await ids('?sort=email')).toEqual(['z', 'q', 'm', 'a']);
    expect(await ids('?sort=email&dir=asc')).toEqual(['a', 'm', 'q', 'z']);
    expect(await ids('?sort=name&dir=sideways')).toEqual(['q', 'a', 'z', 'm']);
    expect(await ids('?sort=EMAIL&dir=asc&sort=email')).toEqual(['m', 'z', 'a', 'q']);
  });

  it('filters by subscribed (omitted = both; other values are 422) and counts the filtered set', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, Array.from({ length: 5 }, () => uniqueAddress()), (i) => i < 2);
    expect(await list(project, '?subscribed=true')).toMatchObject({ total: 2, data: [{ subscribed: true }, { subscribed: true }] });
    const off = await list(project, '?subscribed=false');
    expect(off.total).toBe(3);
    expect(off.data.every((c) => !c.subscribed)).toBe(true);
    expect((await list(project)).total).toBe(5);
    for (const v of ['yes', '1', 'TRUE']) {
      expect(expectEnvelope(await call(project, 'GET', `/contacts?subscribed=${v}`), 422, 'VALIDATION_ERROR').errors[0].field).toBe('subscribed');
    }
  });

  it('searches a case-insensitive substring of the email, matching % and _ literally', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, ['100%real@example.com', '100xreal@example.com', 'a_b@example.com', 'axb@example.com', 'back\\slash@example.com', 'other@test.org']);
    const emails = async (search: string) =>
      (await list(project, `?sort=email&dir=asc&search=${encodeURIComponent(search)}`)).data.map((c) => c.email);
    expect(await emails('100%')).toEqual(['100%real@example.com']);
    expect(await emails('A_B')).toEqual(['a_b@example.com']);
    expect(await emails('k\\s')).toEqual(['back\\slash@example.com']);
    expect(await emails('EXAMPLE.com')).toHaveLength(5);
    expect(await emails('%')).toEqual(['100%real@example.com']);
    expect(await emails('')).toHaveLength(6);
    const page = await list(project, '?search=example&limit=2');
    expect(page).toMatchObject({ total: 5, hasMore: true });
    const rest = await walk(project, `&search=example&cursor=${encodeURIComponent(page.cursor ?? '')}`);
    expect(rest.ids).toHaveLength(3);
  });

  it('answers 422 on field cursor for a malformed cursor or one made for another sort or dir', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, Array.from({ length: 3 }, () => uniqueAddress()));
    const cursor = (await list(project, '?limit=1')).cursor ?? '';
    const emailCursor = (await list(project, '?limit=1&sort=email')).cursor ?? '';
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const bad = [
      'garbage!',
      'null',
      b64({ s: 'createdAt', d: 'desc', k: ['2025-13-01T00:00:00.000000Z', randomUUID()] }),
      b64({ s: 'createdAt', d: 'desc', k: ['2025-02-30T00:00:00.000000Z', randomUUID()] }),
      b64({ s: 'createdAt', d: 'desc', k: ['2025-01-01T00:00:00.000000Z', 'not-a-uuid'] }),
      b64({ s: 'createdAt', d: 'desc', k: ['2025-01-01T00:00:00.000Z', randomUUID()] }),
      b64({ s: 'email', d: 'desc', k: [1] }),
      b64({ s: 'email', d: 'desc', k: ['a', 'b'] }),
      b64({ s: 'name', d: 'desc', k: ['a'] }),
    ];
    for (const c of bad) {
      const res = await call(project, 'GET', `/contacts?cursor=${encodeURIComponent(c)}`);
      expect(expectEnvelope(res, 422, 'VALIDATION_ERROR').errors).toEqual([expect.objectContaining({ field: 'cursor', code: 'invalid_string' })]);
    }
    for (const query of [`?cursor=${cursor}&dir=asc`, `?cursor=${cursor}&sort=email`, `?cursor=${emailCursor}`]) {
      const error = expectEnvelope(await call(project, 'GET', `/contacts${query}`), 422, 'VALIDATION_ERROR');
      expect(error.errors[0]).toMatchObject({ field: 'cursor', message: expect.stringMatching(/sort/) });
    }
    expect((await list(project, `?cursor=${cursor}&limit=5`)).data).toHaveLength(2);
  });

  it('keeps microsecond order across pages: contacts created within one millisecond are neither skipped nor repeated', async () => {
    const { project } = await newProject(t.app);
    const rows = await seed(project.id, Array.from({ length: 6 }, () => uniqueAddress()));
    // Distinct microseconds within one millisecond, in reverse id order.
    await sql`UPDATE contacts SET created_at = '2024-05-01T12:00:00.123000Z'::timestamptz + (6 - n.i) * interval '1 microsecond'
      FROM unnest(${rows.map((r) => r.id)}::uuid[]) WITH ORDINALITY AS n(id, i) WHERE contacts.id = n.id`.execute(t.db.db);
    for (const dir of ['desc', 'asc']) {
      const { ids, pages } = await walk(project, `&dir=${dir}`);
      expect(pages.length).toBe(1);
      const one = await walkWithLimit(project, 1, `&dir=${dir}`);
      expect(one).toEqual(ids);
      expect(new Set(one).size).toBe(6);
    }
  });

  it('walks every contact that existed before the walk exactly once while others are inserted concurrently', async () => {
    const { project } = await newProject(t.app);
    const seeded = await seed(project.id, Array.from({ length: 40 }, () => uniqueAddress('s'))); // one created_at for all
    for (let i = 0; i < 15; i++) await create(project, { email: uniqueAddress('p') });
    const before = (await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', project.id).execute()).map((r) => r.id);
    expect(before).toHaveLength(55);
    expect(seeded).toHaveLength(40);
    for (const query of ['', '&dir=asc', '&sort=email', '&sort=email&dir=asc']) {
      let stop = false;
      const inserter = (async () => {
        let n = 0;
        for (; !stop; n++) await create(project, { email: uniqueAddress(n % 2 ? 'a' : 'z') });
        return n;
      })();
      // Also inserts before and after any position between pages, deterministically.
      const { ids } = await walk(project, query, async () => {
        await create(project, { email: uniqueAddress('0') });
        await create(project, { email: uniqueAddress('zz') });
      }).finally(() => (stop = true));
      expect(await inserter).toBeGreaterThan(0);
      expect(new Set(ids).size, `no repeats (${query})`).toBe(ids.length);
      const seen = new Set(ids);
      expect(before.filter((id) => !seen.has(id)), `none skipped (${query})`).toEqual([]);
    }
  });
});

async function walkWithLimit(p: TestProject, limit: number, query: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await list(p, `?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    ids.push(...page.data.map((c) => c.id));
    cursor = page.cursor;
  } while (cursor);
  return ids;
}

describe('POST /contacts/lookup', () => {
  it('answers each email in input order, echoed as given, compared case-insensitively', async () => {
    const { project } = await newProject(t.app);
    const a = await create(project, { email: 'alice@example.com', data: { k: 1 } });
    const res = await call(project, 'POST', '/contacts/lookup', { emails: ['nobody@example.com', ' ALICE@Example.com', 'not an email', 'alice@example.com'] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      data: [
        { email: 'nobody@example.com', exists: false, contact: null },
        { email: ' ALICE@Example.com', exists: true, contact: withoutMeta(a) },
        { email: 'not an email', exists: false, contact: null },
        { email: 'alice@example.com', exists: true, contact: withoutMeta(a) },
      ],
    });
  });

  it('takes 1 to 500 strings: 500 is fine, none or 501 is 422', async () => {
    const { project } = await newProject(t.app);
    const emails = Array.from({ length: 500 }, (_, i) => `x${i}@example.com`);
    await seed(project.id, emails.slice(0, 250));
    const res = await call(project, 'POST', '/contacts/lookup', { emails });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((d: { exists: boolean }) => d.exists)).toEqual(emails.map((_, i) => i < 250));
    for (const payload of [{ emails: [] }, { emails: [...emails, 'one-more@example.com'] }, {}, { emails: [1] }, { emails: 'a@example.com' }]) {
      const error = expectEnvelope(await call(project, 'POST', '/contacts/lookup', payload), 422, 'VALIDATION_ERROR');
      expect(error.errors[0].field).toMatch(/^emails/);
    }
  });
});

describe('project isolation', () => {
  it("never reads, changes, deletes, lists or finds another project's contacts", async () => {
    const a = (await newProject(t.app)).project;
    const b = (await newProject(t.app)).project;
    const theirs = await create(a, { email: 'shared@example.com', data: { owner: 'a' } });
    await create(b, { email: 'mine@example.com' });
    const before = await rowOf(theirs.id);
    expectEnvelope(await call(b, 'GET', `/contacts/${theirs.id}`), 404, 'NOT_FOUND');
    expectEnvelope(await call(b, 'PATCH', `/contacts/${theirs.id}`, { subscribed: false, data: { owner: 'b' } }), 404, 'NOT_FOUND');
    expectEnvelope(await call(b, 'DELETE', `/contacts/${theirs.id}`), 404, 'NOT_FOUND');
    expect(await rowOf(theirs.id)).toEqual(before);
    expect(await eventNames(theirs.id)).toEqual([]);
    const listed = await list(b, '?search=example');
    expect(listed).toMatchObject({ total: 1, data: [{ email: 'mine@example.com' }] });
    const found = (await call(b, 'POST', '/contacts/lookup', { emails: ['shared@example.com'] })).json();
    expect(found.data).toEqual([{ email: 'shared@example.com', exists: false, contact: null }]);
    // The same email is a separate contact in B.
    const own = await call(b, 'POST', '/contacts', { email: 'SHARED@example.com' });
    expect(own.statusCode).toBe(201);
    expect(own.json().id).not.toBe(theirs.id);
  });

  it('accepts the session cookie with X-Project-Id, scoped to that project', async () => {
    const { user, project } = await newProject(t.app);
    const c = await create(project, { email: uniqueAddress() });
    const res = await t.app.inject({ method: 'GET', url: '/contacts', headers: { cookie: user.cookie, 'x-project-id': project.id } });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.map((x: ContactJson) => x.id)).toEqual([c.id]);
  });
});
