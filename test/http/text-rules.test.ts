import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';

/** Text PostgreSQL refuses: NUL (text and jsonb) and a lone surrogate (jsonb's `\ud800` escape). */
const NUL = '\u0000';
const LONE = '\ud800';

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const secret = () => bearer(project.secret);
const condition = (value: unknown) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value }] }] });

/** Rows the project holds in the tables these requests would write. */
async function stored(): Promise<Record<string, number>> {
  const count = async (table: 'contacts' | 'events' | 'segments' | 'templates') =>
    Number((await t.db.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', project.id).executeTakeFirstOrThrow()).n);
  return { contacts: await count('contacts'), events: await count('events'), segments: await count('segments'), templates: await count('templates') };
}

function expectRefused(res: Parameters<typeof expectEnvelope>[0], field: string, what: RegExp) {
  const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
  expect(error.errors).toEqual([{ field, code: 'invalid_string', message: expect.stringMatching(what) }]);
}

describe('text PostgreSQL cannot store is a 422 naming the field, on every route, and nothing is written', () => {
  it.each([
    ['POST /v1/track: a data value with NUL', () => ({ data: { plan: `pro${NUL}` } }), 'data.plan', /U\+0000 \(NUL\)/],
    ['POST /v1/track: a data key with NUL', () => ({ data: { [`pl${NUL}an`]: 'pro' } }), 'data.pl\\u0000an', /^Key contains U\+0000/],
    ['POST /v1/track: a data value with a lone surrogate', () => ({ data: { plan: `pro${LONE}` } }), 'data.plan', /U\+D800 \(unpaired surrogate\)/],
    ['POST /v1/track: a one-off value with NUL', () => ({ data: { plan: { value: `a${NUL}`, persistent: false } } }), 'data.plan.value', /NUL/],
    ['POST /v1/track: the event name with NUL', () => ({ event: `sign${NUL}up` }), 'event', /NUL/],
  ])('%s', async (_name, change, field, what) => {
    const email = uniqueEmail('track');
    const res = await t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: { email, event: 'signed_up', ...change() } });
    expectRefused(res, field, what);
    expect(await stored()).toEqual({ contacts: 0, events: 0, segments: 0, templates: 0 });
  });

  it('POST /contacts: a data value with a lone surrogate (jsonb refuses it), a data key with one', async () => {
    const value = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret(), payload: { email: uniqueEmail(), data: { city: `Par${LONE}is` } } });
    expectRefused(value, 'data.city', /unpaired surrogate/);
    const key = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret(), payload: { email: uniqueEmail(), data: { [`ci${LONE}ty`]: 'Paris' } } });
    expectRefused(key, 'data.ci\\ud800ty', /^Key contains U\+D800/);
    const email = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret(), payload: { email: `a${NUL}@example.com` } });
    expectRefused(email, 'email', /NUL/);
    expect(await stored()).toEqual({ contacts: 0, events: 0, segments: 0, templates: 0 });
  });

  it('POST /segments: the name, and a condition value deep in the tree', async () => {
    const name = await t.app.inject({ method: 'POST', url: '/segments', headers: secret(), payload: { name: `Pro${NUL}`, condition: condition('pro') } });
    expectRefused(name, 'name', /NUL/);
    const value = await t.app.inject({ method: 'POST', url: '/segments', headers: secret(), payload: { name: 'Pro', condition: condition(`pro${NUL}`) } });
    expectRefused(value, 'condition.groups.0.filters.0.value', /NUL/);
    expect(await stored()).toEqual({ contacts: 0, events: 0, segments: 0, templates: 0 });
  });

  it('POST /templates: the subject', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/templates', headers: secret(), payload: { name: 'T', subject: `Hi${LONE}`, body: '<p>x</p>', from: 'a@example.com' } });
    expectRefused(res, 'subject', /unpaired surrogate/);
    expect(await stored()).toEqual({ contacts: 0, events: 0, segments: 0, templates: 0 });
  });

  it('query strings and path parameters: GET /contacts?search=, GET /contacts/:id', async () => {
    expectRefused(await t.app.inject({ method: 'GET', url: '/contacts?search=ada%00', headers: secret() }), 'search', /NUL/);
    expectRefused(await t.app.inject({ method: 'GET', url: '/templates?search=%00', headers: secret() }), 'search', /NUL/);
    expectRefused(await t.app.inject({ method: 'GET', url: '/contacts/%00', headers: secret() }), 'id', /NUL/);
  });

  it('lists every refused string (bounded), each on its own path', async () => {
    const data = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, `v${NUL}`]));
    const res = await t.app.inject({ method: 'POST', url: '/contacts', headers: secret(), payload: { email: uniqueEmail(), data } });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.errors).toHaveLength(20);
    expect(error.errors[0]).toMatchObject({ field: 'data.k0', code: 'invalid_string' });
  });

  it('a body nested 100,000 levels deep is walked without overflowing the stack', async () => {
    const deep = `${'['.repeat(100_000)}"x${'\\u0000'}"${']'.repeat(100_000)}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/contacts',
      headers: { ...secret(), 'content-type': 'application/json' },
      payload: `{"email":"${uniqueEmail()}","data":{"a":${deep}}}`,
    });
    const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
    expect(error.errors[0]).toMatchObject({ field: expect.stringMatching(/^data\.a\.0\.0\.0\./), code: 'invalid_string' });
  });

  it('text PostgreSQL takes (emoji, other scripts, a paired surrogate) passes', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/contacts',
      headers: secret(),
      payload: { email: uniqueEmail(), data: { name: 'Zoë 🚀 日本 \t\n\u0001' } },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
  });
});
