import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LookupAll } from '../../../src/lib/ssrf.js';
import { ENDPOINT_CONCURRENCY } from '../../../src/modules/webhook-endpoints/deliver.js';
import { deliverEndpoint, type DelivererDeps, endpointSecretBox } from '../../../src/modules/webhook-endpoints/index.js';
import { testEndpoint } from '../../../src/modules/webhook-endpoints/webhook-endpoints.service.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { deliveriesOf, expectSigned, type Receiver, registerEndpoint, startReceiver } from './helpers.js';

/**
 * The calls themselves, with the deliverer run by hand (no worker runs on this file's own
 * database, so nothing else picks the deliveries up): the test ping, redirects, the SSRF guard
 * at call time (WEBHOOK_ALLOW_PRIVATE off, and a host name that resolves to loopback only when
 * called), the per-endpoint concurrency bound over keep-alive sockets, one deliverer per endpoint.
 */

let r: Receiver;
let t: SendTestApp;
beforeAll(async () => {
  r = await startReceiver();
  t = await createSendTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await t?.close();
  await r?.close();
});

const path = () => `/hook/${randomUUID()}`;
const deps = (over: Partial<DelivererDeps> = {}): DelivererDeps => ({ db: t.db.db, box: endpointSecretBox(t.config.secret), allowPrivate: true, ...over });

async function endpoint(p = path(), events = ['contact.unsubscribed']): Promise<{ project: TestProject; id: string; secret: string; path: string }> {
  const { project } = await newProject(t.app);
  const e = await registerEndpoint(t.app, project, `${r.url}${p}`, events);
  return { project, ...e, path: p };
}

/** `n` due deliveries written directly (no wake job: the test runs the deliverer itself). */
async function pending(e: { project: TestProject; id: string }, n = 1): Promise<void> {
  await sql`
    INSERT INTO webhook_deliveries (project_id, endpoint_id, event_id, event_type, event_at, data)
    SELECT ${e.project.id}::uuid, ${e.id}::uuid, uuid_generate_v7(), 'contact.unsubscribed', now(), jsonb_build_object('n', i)
    FROM generate_series(1, ${n}::int) AS i`.execute(t.db.db);
}

const ping = (p: TestProject, id: string) => t.app.inject({ method: 'POST', url: `/webhook-endpoints/${id}/test`, headers: bearer(p.secret) });

describe('POST /webhook-endpoints/:id/test', () => {
  it('sends a signed webhook.test event and answers the outcome; the log has it; the failure state is untouched', async () => {
    const e = await endpoint();
    const res = await ping(e.project, e.id);
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json();
    expect(answer).toEqual({ success: true, statusCode: 200, responseExcerpt: 'ok', error: null, durationMs: expect.any(Number), eventId: expect.any(String) });
    const [call] = r.callsTo(e.path);
    expect(call?.json).toMatchObject({ id: answer.eventId, type: 'webhook.test', data: { endpointId: e.id } });
    if (call) expectSigned(call, e.secret);
    const log = (await t.app.inject({ method: 'GET', url: `/webhook-endpoints/${e.id}/deliveries`, headers: bearer(e.project.secret) })).json();
    expect(log.data[0]).toMatchObject({ eventId: answer.eventId, eventType: 'webhook.test', status: 'DELIVERED', attempts: 1, statusCode: 200 });

    r.answer(e.path, { status: 500, body: 'broken' });
    const failed = (await ping(e.project, e.id)).json();
    expect(failed).toMatchObject({ success: false, statusCode: 500, responseExcerpt: 'broken', error: 'HTTP 500' });
    const row = await t.db.db.selectFrom('webhook_endpoints').select(['failing_since', 'enabled']).where('id', '=', e.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ failing_since: null, enabled: true });
  });

  it('does not follow a redirect (so none can lead to a private address)', async () => {
    const e = await endpoint();
    const elsewhere = path();
    r.answer(e.path, { status: 302, headers: { location: `${r.url}${elsewhere}` } });
    const res = (await ping(e.project, e.id)).json();
    expect(res).toMatchObject({ success: false, statusCode: 302, error: 'HTTP 302: redirects are not followed' });
    expect(r.callsTo(e.path)).toHaveLength(1);
    expect(r.callsTo(elsewhere)).toHaveLength(0);
  });
});

describe('the SSRF guard at call time', () => {
  it('refuses a loopback endpoint when WEBHOOK_ALLOW_PRIVATE is off: the ping and the deliverer record the refusal, nothing is sent', async () => {
    const e = await endpoint();
    const refused = await testEndpoint({ db: t.db.db, box: endpointSecretBox(t.config.secret), allowPrivate: false }, e.project.id, e.id);
    expect(refused).toMatchObject({ success: false, statusCode: null, error: expect.stringMatching(/127\.0\.0\.1 .*loopback.*private addresses are refused/) });
    await pending(e);
    const run = await deliverEndpoint(deps({ allowPrivate: false }), { projectId: e.project.id, endpointId: e.id });
    expect(run).toMatchObject({ ran: true, delivered: 0, failed: 1 });
    expect((await deliveriesOf(t.db, e.id)).find((d) => d.event_type === 'contact.unsubscribed')).toMatchObject({
      status: 'PENDING',
      attempts: 1,
      error: expect.stringMatching(/private addresses are refused/),
    });
    expect(r.callsTo(e.path)).toEqual([]);
  });

  it('resolves the host at call time: a name that now points to loopback is refused; allowed, the call goes to the checked address', async () => {
    const { project } = await newProject(t.app);
    const p = path();
    const port = new URL(r.url).port;
    const e = await registerEndpoint(t.app, project, `http://hooks.example.test:${port}${p}`, ['contact.unsubscribed']);
    const lookups: string[] = [];
    const lookup: LookupAll = async (host) => {
      lookups.push(host);
      return [{ address: '127.0.0.1', family: 4 }];
    };
    await pending({ project, id: e.id });
    await deliverEndpoint(deps({ allowPrivate: false, lookup }), { projectId: project.id, endpointId: e.id });
    expect(lookups).toEqual(['hooks.example.test']);
    expect((await deliveriesOf(t.db, e.id))[0]?.error).toMatch(/hooks\.example\.test resolves to 127\.0\.0\.1 \(loopback\)/);
    expect(r.callsTo(p)).toEqual([]);

    await sql`UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = ${e.id}`.execute(t.db.db);
    await sql`UPDATE webhook_endpoints SET lease_until = NULL WHERE id = ${e.id}`.execute(t.db.db);
    const run = await deliverEndpoint(deps({ allowPrivate: true, lookup }), { projectId: project.id, endpointId: e.id });
    expect(run).toMatchObject({ delivered: 1 });
    expect(r.callsTo(p)[0]?.headers.host).toBe(`hooks.example.test:${port}`);
  });
});

describe('the deliverer', () => {
  it(`calls one endpoint at most ${ENDPOINT_CONCURRENCY} at once, over at most ${ENDPOINT_CONCURRENCY} keep-alive sockets`, async () => {
    const e = await endpoint();
    r.answer(e.path, { status: 204, delayMs: 100 });
    await pending(e, 45);
    const run = await deliverEndpoint(deps(), { projectId: e.project.id, endpointId: e.id });
    expect(run).toMatchObject({ ran: true, delivered: 45, failed: 0 });
    expect(r.callsTo(e.path)).toHaveLength(45);
    const c = r.concurrency(e.path);
    expect(c.max).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);
    expect(c.max).toBeGreaterThan(1);
    expect(c.sockets).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);
    expect(new Set(r.callsTo(e.path).map((x) => x.json.id)).size).toBe(45);
    expect((await deliveriesOf(t.db, e.id)).every((d) => d.status === 'DELIVERED' && d.status_code === 204)).toBe(true);
  });

  it('runs one deliverer per endpoint at a time: a second run finds the lease taken, and no event is sent twice', async () => {
    const e = await endpoint();
    r.answer(e.path, { status: 200, delayMs: 200 });
    await pending(e, 5);
    const runs = await Promise.all([deliverEndpoint(deps(), { projectId: e.project.id, endpointId: e.id }), deliverEndpoint(deps(), { projectId: e.project.id, endpointId: e.id })]);
    expect(runs.map((x) => x.ran).sort()).toEqual([false, true]);
    expect(r.callsTo(e.path)).toHaveLength(5);
    const lease = await t.db.db.selectFrom('webhook_endpoints').select('lease_until').where('id', '=', e.id).executeTakeFirstOrThrow();
    expect(lease.lease_until).toBeNull();
  });

  it('records a secret it cannot open (SECRET changed) as the failure, with what to do', async () => {
    const e = await endpoint();
    await pending(e);
    await deliverEndpoint(deps({ box: endpointSecretBox('another-secret-0123456789abcdefghijklmnop') }), { projectId: e.project.id, endpointId: e.id });
    expect((await deliveriesOf(t.db, e.id))[0]?.error).toMatch(/secret cannot be opened .*rotate-secret/);
    expect(r.callsTo(e.path)).toEqual([]);
  });
});
