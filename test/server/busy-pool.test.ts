import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { requestHead, trickle } from '../helpers/raw-http.js';
import { cleanupServers, freePort, startServer, type ServerProcess } from '../helpers/process.js';

/**
 * The real process (src/server.ts, ROLE=api on a database of its own): its API pool, /health's
 * reserved connection and the body deadline from the environment, over loopback sockets.
 */
let databaseUrl = '';
let dbName = '';
let server: ServerProcess;
let secretKey = '';

async function admin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const base = () => `http://127.0.0.1:${server.port}`;

async function timed(path: string, init: RequestInit = {}, limitMs = 6000) {
  const started = Date.now();
  const res = await fetch(`${base()}${path}`, { ...init, signal: AbortSignal.timeout(limitMs) });
  const body = await res.text();
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body, ms: Date.now() - started };
}

/** One query on `contacts` (GET /contacts would make two at once: the page and its total); 404, no such contact. */
const readContact = (limitMs?: number) => timed(`/contacts/${randomUUID()}`, { headers: { authorization: `Bearer ${secretKey}` } }, limitMs);

beforeAll(async () => {
  dbName = `server_busy_${randomBytes(6).toString('hex')}`;
  await admin(inject('databaseUrl'), (c) => c.query(`CREATE DATABASE ${dbName}`));
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${dbName}`;
  databaseUrl = url.toString();

  server = startServer({ PORT: String(await freePort()), DATABASE_URL: databaseUrl, ROLE: 'api', BODY_TIMEOUT_SECONDS: '2' });
  await server.waitForHealth(60_000);
  const signup = await fetch(`${base()}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `busy-${randomBytes(4).toString('hex')}@example.com`, password: 'correct horse battery' }),
  });
  expect(signup.status).toBe(201);
  const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const project = await fetch(`${base()}/users/@me/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ name: 'busy' }),
  });
  expect(project.status).toBe(201);
  secretKey = ((await project.json()) as { secret: string }).secret;
}, 90_000);

afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await admin(inject('databaseUrl'), (c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
});

describe('server: busy pool and slow bodies', () => {
  it('answers 503 + Retry-After within ~3 s when every API connection is stuck, while /health answers 200', { timeout: 60_000 }, async () => {
    // Every contacts query blocks on the lock, holding its pooled connection: 25 requests take all 20
    // (the key was looked up, and cached, by the requests before the lock).
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    const stuck: Promise<{ status: number }>[] = [];
    try {
      // Opens the API pool's 20 connections (idle ones stay open 10 s): while `contacts` is locked,
      // PostgreSQL 18 could not even start a new connection, so they must exist beforehand.
      const apiConnections = async () =>
        (
          await locker.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'mailplatform-api'",
            [dbName],
          )
        ).rows[0]?.n ?? 0;
      for (let round = 0; round < 5 && (await apiConnections()) < 20; round++) {
        await Promise.all(Array.from({ length: 40 }, () => readContact()));
      }
      expect(await apiConnections()).toBe(20);
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE');
      for (let i = 0; i < 25; i++) stuck.push(readContact(20_000).catch(() => ({ status: -1 })));
      // Wait (bounded) until the server's API connections are all waiting on the lock.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const { rows } = await locker.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'mailplatform-api' AND wait_event_type = 'Lock'",
          [dbName],
        );
        if ((rows[0]?.n ?? 0) >= 20) break;
        if (Date.now() > deadline) throw new Error(`only ${rows[0]?.n} API connections waiting on the lock`);
        await new Promise((r) => setTimeout(r, 100));
      }

      // On its reserved connection: a /health queued on the request pool would answer 503 after
      // the 2 s wait, so the status, not a clock, tells them apart.
      const health = await timed('/health', {}, 3000);
      expect(health.status, health.body).toBe(200);

      // The 2 s acquire wait, then 503. The bound tells it from a wait of 10 s or more (or until the
      // lock goes, 20 s) with 4 s to spare either way for a loaded machine; 9 s aborts the request.
      const busy = await readContact(9_000);
      expect(busy.status, busy.body).toBe(503);
      expect(busy.retryAfter).toBe('2');
      expect(JSON.parse(busy.body)).toMatchObject({ error: { code: 'SERVICE_UNAVAILABLE' } });
      expect(busy.ms).toBeLessThan(6_000);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    // The 20 that held a connection finish once the lock is gone; the others were told to retry.
    const outcomes = (await Promise.all(stuck)).map((r) => r.status);
    expect(outcomes.filter((s) => s === 404)).toHaveLength(20);
    expect(outcomes.filter((s) => s === 503)).toHaveLength(5);
    expect((await timed('/contacts', { headers: { authorization: `Bearer ${secretKey}` } })).status).toBe(200);
  });

  it('answers a JSON body slower than BODY_TIMEOUT_SECONDS with 408 in the envelope', { timeout: 30_000 }, async () => {
    const body = Buffer.from(JSON.stringify({ email: 'slow-server@example.com' }));
    const head = requestHead('POST', '/contacts', { authorization: `Bearer ${secretKey}`, 'content-type': 'application/json' }, body.length);
    const answer = await trickle(server.port, { head, body, burst: 5 }, { intervalMs: 1000, deadlineMs: 10_000 });
    expect(answer.status, answer.body).toBe(408);
    expect(JSON.parse(answer.body)).toMatchObject({ success: false, error: { code: 'REQUEST_TIMEOUT', statusCode: 408 } });
    // The 2 s body deadline (checked every second: 2-3 s), not Node's backstop (the upload deadline
    // + 10 s) nor the test's 10 s: 4 s to spare for a loaded machine, 3 s before the test gives up.
    expect(answer.elapsedMs).toBeLessThan(7_000);
  });
});
