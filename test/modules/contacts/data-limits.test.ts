import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContactData } from '../../../src/db/schema.js';
import { upsertContacts } from '../../../src/modules/contacts/contacts.upsert.js';
import { ContactDataInput, DATA_LIMITS, RequestDataInput } from '../../../src/modules/contacts/data-rules.js';
import { ApiError } from '../../../src/http/errors.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { addVerifiedDomain, createSendTestApp, send, type SendTestApp } from '../emails/helpers.js';

// A database of its own (createSendTestApp): the /v1/send cases enqueue nothing when refused,
// but the accepted ones would otherwise leave send jobs for other files' workers.
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(() => t?.close());

/** `n` keys `${prefix}0…` with short values. */
const keys = (n: number, prefix = 'k'): ContactData => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));

async function seed(projectId: string, email: string, data: ContactData): Promise<string> {
  const [c] = await t.db.db.transaction().execute((trx) => upsertContacts(trx, projectId, [{ email, patch: data, subscribedIfNew: true }]));
  return c?.row.id ?? '';
}

const dataOf = async (projectId: string, email: string) =>
  (await t.db.db.selectFrom('contacts').select('data').where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst())?.data;
const eventCount = async (projectId: string) =>
  Number((await t.db.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', projectId).executeTakeFirstOrThrow()).n);

const post = (project: TestProject, url: string, payload: object, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, headers: { ...bearer(url === '/v1/track' ? project.public : project.secret), ...headers }, payload });
const patch = (project: TestProject, id: string, payload: object) =>
  t.app.inject({ method: 'PATCH', url: `/contacts/${id}`, headers: bearer(project.secret), payload });

/** A 422 whose one error is on `data` (or below it) with `code`, its message matching `message`. */
function expectDataError(res: Awaited<ReturnType<typeof post>>, code: string, message: RegExp) {
  const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
  expect(error.errors, res.body).toEqual([expect.objectContaining({ field: expect.stringMatching(/^data(\.|$)/), code, message: expect.stringMatching(message) })]);
}

const tooManyKeys = /at most 200 data keys/i;
const tooManyBytes = /at most 65536 bytes/i;

describe('limits of one request’s data (schema)', () => {
  it.each([
    ['201 keys', keys(201), 'too_big', tooManyKeys],
    ['a 101-character key', { ['k'.repeat(101)]: 1 }, 'too_big', /at most 100 characters/],
    ['a 10,001-character string', { bio: 'x'.repeat(10_001) }, 'too_big', /at most 10000 characters/],
    ['65,537 bytes of JSON', Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`s${i}`, 'é'.repeat(4_700)])), 'too_big', tooManyBytes],
  ])('refuses %s on every write path, storing nothing', async (_name, data, code, message) => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const id = await seed(project.id, 'kept@example.com', { plan: 'pro' });
    expectDataError(await post(project, '/contacts', { email: 'new@example.com', data }), code, message);
    expectDataError(await patch(project, id, { data }), code, message);
    expectDataError(await post(project, '/v1/track', { email: 'new@example.com', event: 'e', data }), code, message);
    expectDataError(await post(project, '/events/track', { email: 'new@example.com', event: 'e', data }), code, message);
    const mail = { to: 'new@example.com', from: `hi@${domain}`, subject: 's', body: '<p>b</p>', data };
    expectDataError(await send(t.app, project, mail), code, message);
    expect(await dataOf(project.id, 'new@example.com')).toBeUndefined();
    expect(await dataOf(project.id, 'kept@example.com')).toEqual({ plan: 'pro' });
    expect(await eventCount(project.id)).toBe(0);
  });

  it('accepts data exactly at the limits', async () => {
    const { project } = await newProject(t.app);
    expect((await post(project, '/contacts', { email: 'keys@example.com', data: keys(200) })).statusCode).toBe(201);
    const long = { ['k'.repeat(100)]: 'x'.repeat(10_000) };
    expect((await post(project, '/v1/track', { email: 'long@example.com', event: 'e', data: long })).statusCode).toBe(200);
    // 6 strings of 10,000 characters + one filling the rest: exactly 65,536 bytes as compact JSON.
    const big: ContactData = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`s${i}`, 'x'.repeat(10_000)]));
    big.t = 'x'.repeat(DATA_LIMITS.maxBytes - Buffer.byteLength(JSON.stringify({ ...big, t: '' })));
    expect(Buffer.byteLength(JSON.stringify(big))).toBe(DATA_LIMITS.maxBytes);
    expect((await post(project, '/contacts', { email: 'big@example.com', data: big })).statusCode).toBe(201);
    expect(Object.keys((await dataOf(project.id, 'keys@example.com')) ?? {})).toHaveLength(200);
    expect(await dataOf(project.id, 'big@example.com')).toEqual(big);
  });

  it('counts the keys before validating them: 60,000 keys are refused without reading one value', () => {
    let reads = 0;
    const data = {};
    for (let i = 0; i < 60_000; i++) Object.defineProperty(data, `k${i}`, { enumerable: true, get: () => ++reads });
    for (const schema of [ContactDataInput, RequestDataInput]) {
      const r = schema.safeParse(data);
      expect(r.error?.issues).toEqual([expect.objectContaining({ message: 'At most 200 data keys (got 60000)' })]);
    }
    expect(reads).toBe(0);
  });
});

describe('limits of a contact’s data after the merge', () => {
  it('refuses a PATCH adding 50 keys to a contact with 180 (422 naming the limit), and accepts one within it', async () => {
    const { project } = await newProject(t.app);
    const id = await seed(project.id, 'm@example.com', keys(180));
    expectDataError(await patch(project, id, { data: keys(50, 'new') }), 'too_big', /A contact holds at most 200 data keys/);
    expectDataError(await patch(project, id, { subscribed: false, data: keys(21, 'new') }), 'too_big', tooManyKeys);
    const stored = await t.db.db.selectFrom('contacts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(stored.data).toEqual(keys(180));
    expect(stored.subscribed).toBe(true); // nothing of the refused PATCH was written
    // Deleting 20 keys (null) while adding 40 stays at 200: accepted.
    const swap = { ...Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, null])), ...keys(40, 'new') };
    const ok = await patch(project, id, { data: swap });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(Object.keys(ok.json().data)).toHaveLength(200);
  });

  it('refuses POST /contacts, /v1/track and /v1/send when the merged data would break a limit, writing nothing', async () => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    await seed(project.id, 'm@example.com', keys(180));
    const big: ContactData = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`s${i}`, 'x'.repeat(10_000)]));
    await seed(project.id, 'b@example.com', big);
    const more = keys(50, 'new');
    const fat = { extra: 'y'.repeat(8_000) };

    expectDataError(await post(project, '/contacts', { email: 'M@example.com', data: more }), 'too_big', tooManyKeys);
    expectDataError(await post(project, '/contacts', { email: 'b@example.com', data: fat }), 'too_big', /A contact's data is at most 65536 bytes/);
    expectDataError(await post(project, '/v1/track', { email: 'm@example.com', event: 'e', data: more }), 'too_big', tooManyKeys);
    expectDataError(await post(project, '/events/track', { email: 'b@example.com', event: 'e', data: fat }), 'too_big', tooManyBytes);
    const mail = { from: `hi@${domain}`, subject: 's', body: '<p>b</p>' };
    expectDataError(await send(t.app, project, { ...mail, to: 'm@example.com', data: more }), 'too_big', tooManyKeys);
    // One recipient over the limit refuses the whole request: no email for the other one either.
    expectDataError(await send(t.app, project, { ...mail, to: ['ok@example.com', 'b@example.com'], data: fat }), 'too_big', tooManyBytes);

    expect(await dataOf(project.id, 'm@example.com')).toEqual(keys(180));
    expect(await dataOf(project.id, 'b@example.com')).toEqual(big);
    expect(await dataOf(project.id, 'ok@example.com')).toBeUndefined();
    expect(await eventCount(project.id)).toBe(0);
    expect(await t.db.db.selectFrom('emails').select('id').where('project_id', '=', project.id).execute()).toEqual([]);

    // One-off values are not stored, so they never count against the contact.
    const oneOff = { ...Object.fromEntries(Object.keys(more).map((k) => [k, { value: 1, persistent: false }])) };
    expect((await post(project, '/v1/track', { email: 'm@example.com', event: 'e', data: oneOff })).statusCode).toBe(200);
    expect((await send(t.app, project, { ...mail, to: 'm@example.com', data: oneOff })).statusCode).toBe(200);
  });

  it('frees the Idempotency-Key of a refused track call', async () => {
    const { project } = await newProject(t.app);
    await seed(project.id, 'm@example.com', keys(200));
    const headers = { 'idempotency-key': 'limits-1' };
    expectDataError(await post(project, '/v1/track', { email: 'm@example.com', event: 'e', data: { extra: 1 } }, headers), 'too_big', tooManyKeys);
    const retry = await post(project, '/v1/track', { email: 'm@example.com', event: 'e', data: { k0: 'changed' } }, headers);
    expect(retry.statusCode, retry.body).toBe(200);
    expect(await eventCount(project.id)).toBe(1);
  });

  it('lets a contact stored over the limits (before they existed) shrink and be rewritten, but not grow', async () => {
    const { project } = await newProject(t.app);
    const id = await seed(project.id, 'old@example.com', {});
    await t.db.db.updateTable('contacts').set({ data: JSON.stringify(keys(250)) }).where('id', '=', id).execute();
    const same = await patch(project, id, { data: { k0: 0, k1: 1 } });
    expect(same.statusCode, same.body).toBe(200);
    const shrink = await patch(project, id, { data: { k0: null, k1: null, k2: 'changed' } });
    expect(shrink.statusCode, shrink.body).toBe(200);
    expect(Object.keys(shrink.json().data)).toHaveLength(248);
    expectDataError(await patch(project, id, { data: { k0: 'back' } }), 'too_big', tooManyKeys);
    expect((await post(project, '/v1/track', { email: 'old@example.com', event: 'e', data: { k3: 'x' } })).statusCode).toBe(200);
  });
});

describe('a merge racing another write of the same contact', () => {
  /** Runs `second` while `first` (in its own transaction) holds the contact's row, then commits `first`. */
  async function race(id: string, first: ContactData, second: () => Promise<unknown>): Promise<unknown> {
    let outcome: Promise<unknown> | undefined;
    await t.db.db.transaction().execute(async (trx) => {
      await sql`UPDATE contacts SET data = data || ${JSON.stringify(first)}::jsonb WHERE id = ${id}`.execute(trx);
      outcome = second().catch((e: unknown) => e);
      // Poll until the second write waits for this transaction's row lock.
      for (let i = 0; ; i++) {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`.execute(t.db.db);
        if ((rows[0]?.n ?? 0) > 0) break;
        if (i > 500) throw new Error('the second write never waited for the row lock');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    });
    return outcome;
  }

  const upsert = (projectId: string, patch: ContactData) => () =>
    t.db.db.transaction().execute((trx) => upsertContacts(trx, projectId, [{ email: 'race@example.com', patch, subscribedIfNew: true }]));

  it('keeps both writes when the limits allow them', async () => {
    const { project } = await newProject(t.app);
    const id = await seed(project.id, 'race@example.com', { a: 1 });
    const result = await race(id, { b: 2 }, upsert(project.id, { c: 3 }));
    expect(result).not.toBeInstanceOf(Error);
    expect(await dataOf(project.id, 'race@example.com')).toEqual({ a: 1, b: 2, c: 3 });
  });

  it('checks the limits against the row as the other write left it, and refuses instead of reporting success', async () => {
    const { project } = await newProject(t.app);
    const id = await seed(project.id, 'race@example.com', keys(190));
    // Alone, either write stays within 200 keys; together they would make 205.
    const result = await race(id, keys(10, 'first'), upsert(project.id, keys(5, 'second')));
    expect(result).toBeInstanceOf(ApiError);
    expect(result).toMatchObject({ statusCode: 422, errors: [{ field: 'data', code: 'too_big' }] });
    expect(await dataOf(project.id, 'race@example.com')).toEqual({ ...keys(190), ...keys(10, 'first') });
  });

  it('does the same for PATCH /contacts/:id', async () => {
    const { project } = await newProject(t.app);
    const id = await seed(project.id, 'race@example.com', keys(190));
    const res = (await race(id, keys(10, 'first'), () => patch(project, id, { data: keys(5, 'second') }))) as Awaited<ReturnType<typeof patch>>;
    expectDataError(res, 'too_big', tooManyKeys);
    expect(await dataOf(project.id, 'race@example.com')).toEqual({ ...keys(190), ...keys(10, 'first') });
    const both = (await race(id, { first0: 'again' }, () => patch(project, id, { data: { k0: 'x' } }))) as Awaited<ReturnType<typeof patch>>;
    expect(both.statusCode, both.body).toBe(200);
    expect(both.json().data).toMatchObject({ first0: 'again', k0: 'x' });
  });
});

