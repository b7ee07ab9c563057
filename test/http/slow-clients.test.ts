import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createAppDeps } from '../../src/app-deps.js';
import { connectForRequests, REQUEST_ACQUIRE_TIMEOUT_MS, type RequestDb } from '../../src/db/connection.js';
import { memoryStore } from '../../src/http/rate-limit.js';
import { newProject, type TestProject, uniqueEmail } from '../helpers/accounts.js';
import { testConfig } from '../helpers/app.js';
import { type RawAnswer, requestHead, trickle } from '../helpers/raw-http.js';

/**
 * Slow clients and an exhausted pool, over real sockets on loopback, against the app wired as
 * src/server.ts wires it (connectForRequests: 2 s acquire timeout, /health's reserved
 * connection), with a small pool so that a few held connections exhaust it.
 */
const POOL_SIZE = 4;
const BODY_TIMEOUT_S = 2;
const UPLOAD_TIMEOUT_S = 4;
const SLOW_UPLOADS = 25;

let app: FastifyInstance;
let db: RequestDb;
let port: number;
let attacker: TestProject;
let victim: TestProject;
/** Resolves when the connections taken by a marked request are released again. */
let held: Promise<void> = Promise.resolve();
/** Longer than the 2 s wait: the 503's own recording of the key (if any) would then succeed. */
const HOLD_MS = REQUEST_ACQUIRE_TIMEOUT_MS + 500;

beforeAll(async () => {
  const config = testConfig({ BODY_TIMEOUT_SECONDS: String(BODY_TIMEOUT_S), UPLOAD_TIMEOUT_SECONDS: String(UPLOAD_TIMEOUT_S) });
  db = connectForRequests(inject('databaseUrl'), { max: POOL_SIZE });
  app = await buildApp(createAppDeps(config, db.db, { ping: db.ping }), { rateLimitStore: memoryStore() });
  // Marked requests find every pooled connection taken once the Idempotency-Key lookup is done,
  // until HOLD_MS later: their own transaction cannot begin within the 2 s wait.
  app.addHook('preHandler', async (request) => {
    if (request.headers['x-test-hold-pool'] !== '1') return;
    const clients = await Promise.all(Array.from({ length: POOL_SIZE }, () => db.pool.connect()));
    held = new Promise((resolve) =>
      setTimeout(() => {
        for (const c of clients) c.release();
        resolve();
      }, HOLD_MS),
    );
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
  attacker = (await newProject(app)).project;
  victim = (await newProject(app)).project;
});

afterAll(async () => {
  await app?.close();
  await db?.close();
});

const base = () => `http://127.0.0.1:${port}`;

/** A timed request; a request that gets no answer within `limitMs` fails the test there. */
async function timed(path: string, init: RequestInit = {}, limitMs = 5000): Promise<{ res: Response; ms: number; body: string }> {
  const started = Date.now();
  const res = await fetch(`${base()}${path}`, { ...init, signal: AbortSignal.timeout(limitMs) });
  const body = await res.text();
  return { res, ms: Date.now() - started, body };
}

const createContact = (project: TestProject, limitMs?: number) =>
  timed(
    '/contacts',
    {
      method: 'POST',
      headers: { authorization: `Bearer ${project.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail('victim') }),
    },
    limitMs,
  );

function expectTimeoutEnvelope(answer: RawAnswer): void {
  expect(answer.status, answer.body).toBe(408);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body) as { success: boolean; error: { code: string; statusCode: number; requestId: string } };
  expect(body).toMatchObject({ success: false, error: { code: 'REQUEST_TIMEOUT', statusCode: 408 } });
  expect(body.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
}

/** A multipart upload whose part headers arrive at once and whose file then comes 1 byte/s. */
function slowUpload(deadlineMs: number): Promise<RawAnswer> {
  const boundary = '----slowclient';
  const preamble = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.csv"\r\nContent-Type: text/csv\r\n\r\n`;
  const file = `email,name\r\n${Array.from({ length: 20 }, (_, i) => `slow${i}@example.com,Slow ${i}`).join('\r\n')}\r\n`;
  const body = Buffer.from(`${preamble}${file}\r\n--${boundary}--\r\n`);
  const head = requestHead(
    'POST',
    '/contacts/import',
    { authorization: `Bearer ${attacker.secret}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body.length,
  );
  // The part headers and the CSV header row at once: the file is open and its bytes trickle.
  return trickle(port, { head, body, burst: preamble.length + 12 }, { intervalMs: 1000, deadlineMs });
}

describe('slow request bodies', () => {
  it(
    `${SLOW_UPLOADS} uploads at 1 byte/s hold no database connection: another project and /health answer at once; each upload gets 408`,
    { timeout: 60_000 },
    async () => {
      const started = Date.now();
      const uploads = Array.from({ length: SLOW_UPLOADS }, () => slowUpload((UPLOAD_TIMEOUT_S + 8) * 1000));
      // Probes while the uploads trickle (they were sent >1 s ago: each is inside its file part).
      const probes: { contact: number; health: number; ms: number }[] = [];
      while (Date.now() - started < (UPLOAD_TIMEOUT_S - 1) * 1000 && probes.length < 10) {
        await new Promise((r) => setTimeout(r, 700));
        const [contact, health] = await Promise.all([createContact(victim), timed('/health')]);
        probes.push({ contact: contact.res.status, health: health.res.status, ms: Math.max(contact.ms, health.ms) });
      }
      for (const p of probes) {
        // A probe that found the pool held by the uploads waits 2 s and gets 503: the status
        // tells it apart. The bound adds that none queued for a connection at all: probes take
        // tens of ms (20 times less than this) even on a loaded two-core machine.
        expect(p).toMatchObject({ contact: 201, health: 200 });
        expect(p.ms).toBeLessThan(1000);
      }
      expect(probes.length).toBeGreaterThanOrEqual(3);

      const answers = await Promise.all(uploads);
      for (const answer of answers) {
        expectTimeoutEnvelope(answer);
        // The route's own deadline (4 s), not Node's backstop (14 s) nor the test's deadline
        // (12 s): 5 s to spare for a loaded machine, 3 s before the test gives up.
        expect(answer.elapsedMs).toBeLessThan((UPLOAD_TIMEOUT_S + 5) * 1000);
      }
      // Nothing of the slow uploads was stored.
      const jobs = await db.db.selectFrom('jobs').select('id').where('project_id', '=', attacker.id).execute();
      expect(jobs).toEqual([]);
      // And the server still answers.
      expect((await timed('/health')).res.status).toBe(200);
    },
  );

  it('a JSON body sent too slowly gets 408 in the error envelope at the body deadline', { timeout: 30_000 }, async () => {
    const body = Buffer.from(JSON.stringify({ email: uniqueEmail('slow'), data: { note: 'x'.repeat(40) } }));
    const head = requestHead('POST', '/contacts', { authorization: `Bearer ${victim.secret}`, 'content-type': 'application/json' }, body.length);
    const answer = await trickle(port, { head, body, burst: 10 }, { intervalMs: 500, deadlineMs: (BODY_TIMEOUT_S + 8) * 1000 });
    expectTimeoutEnvelope(answer);
    expect(answer.headers.connection).toBe('close');
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(BODY_TIMEOUT_S * 1000 - 100);
    // The body deadline (2 s, checked every second), not Node's backstop (14 s) nor the test's
    // deadline (10 s): 4 s to spare for a loaded machine.
    expect(answer.elapsedMs).toBeLessThan((BODY_TIMEOUT_S + 5) * 1000);
  });

  it('a JSON body that arrives in time, even in pieces, is accepted', { timeout: 30_000 }, async () => {
    const body = Buffer.from(JSON.stringify({ email: uniqueEmail('pieces') }));
    const head = requestHead('POST', '/contacts', { authorization: `Bearer ${victim.secret}`, 'content-type': 'application/json' }, body.length);
    const answer = await trickle(port, { head, body, burst: body.length - 3 }, { intervalMs: 200, deadlineMs: 10_000 });
    expect(answer.status, answer.body).toBe(201);
  });

  it("headers sent too slowly get Node's own 408, in the error envelope", { timeout: 30_000 }, async () => {
    const head = 'POST /contacts HTTP/1.1\r\nhost: 127.0.0.1\r\n';
    const more = Buffer.from(`authorization: Bearer ${victim.secret}\r\ncontent-type: application/json\r\n\r\n`);
    const answer = await trickle(port, { head, body: more, burst: 0 }, { intervalMs: 500, deadlineMs: (BODY_TIMEOUT_S + 8) * 1000 });
    expectTimeoutEnvelope(answer);
    // headersTimeout is BODY_TIMEOUT_SECONDS; Node checks connections every second. Without it:
    // Node's default (the 14 s request timeout), past the test's 10 s deadline; 4 s to spare.
    expect(answer.elapsedMs).toBeLessThan((BODY_TIMEOUT_S + 5) * 1000);
  });

  it('malformed HTTP is answered in the error envelope before the socket closes', { timeout: 15_000 }, async () => {
    const answer = await trickle(port, { head: 'NOT HTTP AT ALL\r\n\r\n', body: Buffer.alloc(0), burst: 0 }, { intervalMs: 1000, deadlineMs: 5000 });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, error: { code: 'BAD_REQUEST', statusCode: 400 } });
  });
});

describe('an exhausted pool', () => {
  it('answers 503 SERVICE_UNAVAILABLE with Retry-After within ~3 s, while /health still answers 200', { timeout: 30_000 }, async () => {
    const held: pg.PoolClient[] = [];
    try {
      for (let i = 0; i < POOL_SIZE; i++) held.push(await db.pool.connect());
      // On its reserved connection: a /health queued on the request pool would answer 503 after
      // the 2 s wait, so the status, not a clock, tells them apart.
      const health = await timed('/health', {}, 3000);
      expect(health.res.status, health.body).toBe(200);

      const busy = await createContact(victim, 9_000);
      expect(busy.res.status, busy.body).toBe(503);
      expect(busy.res.headers.get('retry-after')).toBe('2');
      expect(JSON.parse(busy.body)).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 } });
      // The 2 s wait, then 503: told from a wait of 10 s (or none) with 4 s to spare for a loaded machine.
      expect(busy.ms).toBeGreaterThanOrEqual(REQUEST_ACQUIRE_TIMEOUT_MS - 100);
      expect(busy.ms).toBeLessThan(6_000);
    } finally {
      for (const client of held) client.release();
    }
    // Released: the same request goes through.
    expect((await createContact(victim)).res.status).toBe(201);
  });

  it('a request answered 503 for want of a connection leaves its Idempotency-Key free for the retry', { timeout: 30_000 }, async () => {
    const key = `busy-${uniqueEmail()}`;
    const track = (extra: Record<string, string>) =>
      timed('/v1/track', {
        method: 'POST',
        headers: { authorization: `Bearer ${victim.public}`, 'content-type': 'application/json', 'idempotency-key': key, ...extra },
        body: JSON.stringify({ email: uniqueEmail('busy'), event: 'busy_retry' }),
      });
    const busy = await track({ 'x-test-hold-pool': '1' });
    expect(busy.res.status, busy.body).toBe(503);
    expect(busy.res.headers.get('retry-after')).toBe('2');
    await held;
    const retry = await track({});
    expect(retry.res.status, retry.body).toBe(200);
  });
});
