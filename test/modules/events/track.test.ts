import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { track } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const contactsOf = (projectId: string) =>
  t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', projectId).orderBy('email').execute();
const eventsOf = (projectId: string) =>
  t.db.db.selectFrom('events').selectAll().where('project_id', '=', projectId).orderBy('created_at').orderBy('id').execute();
const contactByEmail = (projectId: string, email: string) =>
  t.db.db.selectFrom('contacts').selectAll().where('project_id', '=', projectId).where('email', '=', email).executeTakeFirstOrThrow();

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('POST /v1/track', () => {
  it('records the event, creates the contact subscribed and answers with their ids', async () => {
    const { project } = await newProject(t.app);
    const res = await track(t.app, project, { email: 'Ada@Example.COM', event: 'signed-up', data: { plan: 'pro' } });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toEqual({ success: true, data: { contact: expect.any(String), event: expect.any(String), timestamp: expect.stringMatching(ISO_MS) } });
    const contact = await contactByEmail(project.id, 'ada@example.com');
    expect(contact).toMatchObject({ id: body.data.contact, subscribed: true, data: { plan: 'pro' } });
    const events = await eventsOf(project.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ id: body.data.event, contact_id: contact.id, name: 'signed-up', data: { plan: 'pro' } });
    expect(events[0]?.created_at.toISOString()).toBe(body.data.timestamp);
  });

  it('takes the public key only; POST /events/track takes the secret key or a session', async () => {
    const { user, project } = await newProject(t.app);
    const payload = { email: 'keys@example.com', event: 'x' };
    const secretOnPublic = await t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.secret), payload });
    expect(expectEnvelope(secretOnPublic, 401, 'INVALID_API_KEY').message).toMatch(/requires a public key/);
    const publicOnAlias = await t.app.inject({ method: 'POST', url: '/events/track', headers: bearer(project.public), payload });
    expectEnvelope(publicOnAlias, 401, 'INVALID_API_KEY');

    const alias = await t.app.inject({ method: 'POST', url: '/events/track', headers: bearer(project.secret), payload });
    expect(alias.statusCode, alias.body).toBe(200);
    expect(alias.json()).toMatchObject({ success: true, data: { contact: expect.any(String), event: expect.any(String) } });
    const bySession = await t.app.inject({
      method: 'POST',
      url: '/events/track',
      headers: { cookie: user.cookie, 'x-project-id': project.id },
      payload,
    });
    expect(bySession.statusCode, bySession.body).toBe(200);
    expect(await eventsOf(project.id)).toHaveLength(2);
  });

  it('applies every data rule: primitives stored, null deletes, empty string ignored, one-off values on the event only, reserved keys dropped', async () => {
    const { project } = await newProject(t.app);
    await track(t.app, project, { email: 'd@example.com', event: 'e1', data: { plan: 'free', city: 'Oslo', seats: 1 } });
    const res = await track(t.app, project, {
      email: 'd@example.com',
      event: 'e2',
      data: {
        plan: 'pro',
        seats: 5,
        trial: false,
        city: null,
        nick: '',
        code: { value: '1234', persistent: false },
        region: { value: 'eu', persistent: true },
        id: 'x',
        email: 'other@example.com',
        service_id: 'x',
        service_email: 'x',
        unsubscribeUrl: 'x',
        subscribeUrl: 'x',
        manageUrl: 'x',
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const contact = await contactByEmail(project.id, 'd@example.com');
    expect(contact.data).toEqual({ plan: 'pro', seats: 5, trial: false, region: 'eu' });
    const events = await eventsOf(project.id);
    expect(events.map((e) => e.name)).toEqual(['e1', 'e2']);
    expect(events[1]?.data).toEqual({ plan: 'pro', seats: 5, trial: false, code: '1234', region: 'eu' });
  });

  it('subscribes new contacts unless subscribed is false, and keeps an existing contact’s state unless given', async () => {
    const { project } = await newProject(t.app);
    await track(t.app, project, { email: 'new-default@example.com', event: 'x' });
    await track(t.app, project, { email: 'new-off@example.com', event: 'x', subscribed: false });
    expect((await contactByEmail(project.id, 'new-default@example.com')).subscribed).toBe(true);
    expect((await contactByEmail(project.id, 'new-off@example.com')).subscribed).toBe(false);

    // Tracking without `subscribed` does not resubscribe; false keeps it quiet; true flips it.
    await track(t.app, project, { email: 'new-off@example.com', event: 'y' });
    expect((await contactByEmail(project.id, 'new-off@example.com')).subscribed).toBe(false);
    await track(t.app, project, { email: 'new-off@example.com', event: 'z', subscribed: true });
    expect((await contactByEmail(project.id, 'new-off@example.com')).subscribed).toBe(true);
    await track(t.app, project, { email: 'new-default@example.com', event: 'w', subscribed: false });
    expect((await contactByEmail(project.id, 'new-default@example.com')).subscribed).toBe(false);

    const names = async (email: string) => {
      const c = await contactByEmail(project.id, email);
      return (await eventsOf(project.id)).filter((e) => e.contact_id === c.id).map((e) => e.name).sort();
    };
    // Creating a contact is not a subscription change; flips record their system event.
    expect(await names('new-off@example.com')).toEqual(['contact.subscribed', 'x', 'y', 'z']);
    expect(await names('new-default@example.com')).toEqual(['contact.unsubscribed', 'w', 'x']);
  });

  it('records a new event on every call', async () => {
    const { project } = await newProject(t.app);
    const ids = [];
    for (let i = 0; i < 3; i++) {
      const res = await track(t.app, project, { email: 'same@example.com', event: 'page-view', data: { path: '/' } });
      ids.push(res.json().data.event);
    }
    expect(new Set(ids).size).toBe(3);
    expect(await eventsOf(project.id)).toHaveLength(3);
    expect(await contactsOf(project.id)).toHaveLength(1);
  });

  it('refuses every reserved name with 422 reserved_event and accepts similar names', async () => {
    const { project } = await newProject(t.app);
    const reserved = ['email.open', 'email.anything', 'Email.Click', 'contact.subscribed', 'contact.unsubscribed', 'segment.vip-users.entry', 'segment.x.exit'];
    for (const event of reserved) {
      const res = await track(t.app, project, { email: 'r@example.com', event });
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors, event).toEqual([{ field: 'event', code: 'reserved_event', message: expect.stringMatching(/reserved/) }]);
    }
    expect(await eventsOf(project.id)).toHaveLength(0);
    expect(await contactsOf(project.id)).toHaveLength(0);

    const similar = ['email', 'emails.open', 'my.email.open', 'contact.created', 'contact.subscribed.twice', 'segment.entry', 'segment.x.entered', 'segments.x.exit'];
    for (const event of similar) {
      expect((await track(t.app, project, { email: 'r@example.com', event })).statusCode, event).toBe(200);
    }
    expect((await eventsOf(project.id)).map((e) => e.name).sort()).toEqual([...similar].sort());
  });

  it('answers 422 VALIDATION_ERROR for an invalid body, naming the field', async () => {
    const { project } = await newProject(t.app);
    const cases: [object, string, string][] = [
      [{ event: 'x' }, 'email', 'invalid_type'],
      [{ email: 'not-an-email', event: 'x' }, 'email', 'invalid_string'],
      [{ email: 'v@example.com' }, 'event', 'invalid_type'],
      [{ email: 'v@example.com', event: '' }, 'event', 'too_small'],
      [{ email: 'v@example.com', event: '   ' }, 'event', 'too_small'],
      [{ email: 'v@example.com', event: 'e'.repeat(256) }, 'event', 'too_big'],
      [{ email: 'v@example.com', event: 'x', subscribed: 'yes' }, 'subscribed', 'invalid_type'],
      [{ email: 'v@example.com', event: 'x', data: { nested: { a: 1 } } }, 'data.nested', 'invalid_union'],
      [{ email: 'v@example.com', event: 'x', data: { bad: 'a\u0000b' } }, 'data.bad', 'invalid_string'],
      [{ email: 'v@example.com', event: 'a\u0000b' }, 'event', 'invalid_string'],
    ];
    for (const [payload, field, code] of cases) {
      const res = await track(t.app, project, payload);
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors, JSON.stringify(payload)).toEqual(expect.arrayContaining([expect.objectContaining({ field, code })]));
    }
    expect((await track(t.app, project, { email: 'v@example.com', event: 'e'.repeat(255) })).statusCode).toBe(200);
    expect(await eventsOf(project.id)).toHaveLength(1);
  });

  it('keeps contacts and events of projects apart', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    const ra = await track(t.app, a.project, { email: 'shared@example.com', event: 'x', data: { p: 'a' } });
    const rb = await track(t.app, b.project, { email: 'shared@example.com', event: 'x', data: { p: 'b' } });
    expect(ra.json().data.contact).not.toBe(rb.json().data.contact);
    expect((await contactByEmail(a.project.id, 'shared@example.com')).data).toEqual({ p: 'a' });
    expect((await contactByEmail(b.project.id, 'shared@example.com')).data).toEqual({ p: 'b' });
  });
});

describe('Idempotency-Key on /v1/track', () => {
  const keyed = (project: TestProject, key: string, payload: object = { email: 'i@example.com', event: 'order' }) =>
    track(t.app, project, payload, { 'idempotency-key': key });

  it('performs exactly once when ten requests with one key race', async () => {
    const { project } = await newProject(t.app);
    const results = await Promise.all(Array.from({ length: 10 }, () => keyed(project, 'race')));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(expectEnvelope(r, 409, 'IDEMPOTENCY_KEY_REUSED').details).toMatchObject({
        key: 'race',
        originalRequest: { method: 'POST', path: '/v1/track' },
        originalStatusCode: 200,
      });
    }
    expect((await eventsOf(project.id)).filter((e) => e.name === 'order')).toHaveLength(1);
    const keys = await t.db.db.selectFrom('idempotency_keys').selectAll().where('project_id', '=', project.id).execute();
    expect(keys).toEqual([expect.objectContaining({ key: 'race', status_code: 200, path: '/v1/track' })]);
  });

  it('performs each of many distinct keys sent at once, and refuses their reuse', async () => {
    const { project } = await newProject(t.app);
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => keyed(project, `k${i}`, { email: `u${i % 4}@example.com`, event: 'e' })));
    expect(first.every((r) => r.statusCode === 200)).toBe(true);
    const again = await Promise.all(Array.from({ length: 20 }, (_, i) => keyed(project, `k${i}`, { email: `u${i % 4}@example.com`, event: 'e' })));
    expect(again.every((r) => r.statusCode === 409)).toBe(true);
    expect(await eventsOf(project.id)).toHaveLength(20);
  });

  it('frees the key after a 4xx answer, so the corrected request is performed', async () => {
    const { project } = await newProject(t.app);
    expect((await keyed(project, 'fix-me', { email: 'i@example.com', event: 'email.open' })).statusCode).toBe(422);
    expect((await keyed(project, 'fix-me')).statusCode).toBe(200);
    expect((await keyed(project, 'fix-me')).statusCode).toBe(409);
    expect(await eventsOf(project.id)).toHaveLength(1);
  });

  it('scopes keys to the project', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    expect((await keyed(a.project, 'same')).statusCode).toBe(200);
    expect((await keyed(b.project, 'same')).statusCode).toBe(200);
  });
});

describe('group commit through /v1/track', () => {
  it('records 200 concurrent tracks for 20 emails: 200 events, 20 contacts, data merged in order per contact', async () => {
    const { project } = await newProject(t.app);
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => track(t.app, project, { email: `c${i % 20}@example.com`, event: 'tick', data: { seq: i, [`k${i}`]: true } })),
    );
    expect(results.map((r) => r.statusCode).filter((s) => s !== 200)).toEqual([]);
    const events = (await eventsOf(project.id)).filter((e) => e.name === 'tick');
    expect(events).toHaveLength(200);
    expect(new Set(results.map((r) => r.json().data.event)).size).toBe(200);
    const contacts = await contactsOf(project.id);
    expect(contacts).toHaveLength(20);
    for (const contact of contacts) {
      const own = events.filter((e) => e.contact_id === contact.id);
      expect(own).toHaveLength(10);
      // Each event of a contact committed in its own, later transaction: the last one's data won.
      expect(new Set(own.map((e) => e.created_at.getTime())).size).toBe(10);
      expect(contact.data.seq).toBe(own.at(-1)?.data.seq);
      expect(Object.keys(contact.data).filter((k) => k.startsWith('k'))).toHaveLength(10);
    }
    // The calls shared transactions (events of one transaction share created_at).
    expect(new Set(events.map((e) => e.created_at.getTime())).size).toBeLessThan(200);
  });
});
