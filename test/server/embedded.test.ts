import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionCookie, uniqueEmail } from '../helpers/accounts.js';
import {
  cleanupServers,
  embeddedPostgresRunning,
  freePort,
  isAlive,
  makeTempRoot,
  postmasterPid,
  sleep,
  startServer,
  withTimeout,
  type ServerProcess,
} from '../helpers/process.js';

/** A client that keeps idle connections open for a minute, as browsers and proxies do. */
const keepAliveAgent = new http.Agent({ keepAlive: true, timeout: 60_000 });

/**
 * POSTs a JSON body in `chunks` pieces, `intervalMs` apart, and runs `midway` after half
 * of them: the request is in flight (routed, body still arriving) while `midway` runs.
 */
async function slowPost(
  url: string,
  body: string,
  opts: { chunks: number; intervalMs: number; midway: () => Promise<void> },
): Promise<{ status: number; body: string; connection: string | undefined }> {
  const req = http.request(url, {
    method: 'POST',
    agent: keepAliveAgent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const response = new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, connection: res.headers.connection }));
      res.on('error', reject);
    });
  });
  response.catch(() => undefined); // awaited below; a reset must not surface as unhandled first
  const size = Math.ceil(body.length / opts.chunks);
  for (let i = 0; i < opts.chunks; i++) {
    req.write(body.slice(i * size, (i + 1) * size));
    if (i === Math.floor(opts.chunks / 2)) await opts.midway();
    await sleep(opts.intervalMs);
  }
  req.end();
  return withTimeout(response, 15_000, 'response to the in-flight request');
}

async function post(port: number, url: string, payload: unknown, cookie?: string) {
  return fetch(`http://127.0.0.1:${port}${url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: JSON.stringify(payload),
    signal: AbortSignal.timeout(10_000),
  });
}

describe('server with no DATABASE_URL (embedded PostgreSQL under DATA_DIR)', () => {
  // The three tests are one lifecycle: cold start, SIGTERM, warm start on the same data.
  let dataDir: string;
  let port: number;
  let first: ServerProcess | undefined;
  let firstCookie = '';
  const email = uniqueEmail('restart');
  const password = 'correct horse battery';

  beforeAll(async () => {
    dataDir = path.join(makeTempRoot(), 'data');
    port = await freePort();
  });
  afterAll(async () => {
    keepAliveAgent.destroy();
    await cleanupServers({ removeTemp: true });
  });

  it('starts PostgreSQL under DATA_DIR, migrates, answers /health and runs the worker in the same process', { timeout: 60_000 }, async () => {
    first = startServer({ PORT: String(port), DATA_DIR: dataDir });
    expect(await first.waitForHealth(45_000)).toEqual({ status: 'ok' });
    await first.waitForLog(/^ready: API on http:\/\/localhost:\d+$/, 5000);
    await first.waitForLog(/^Worker connected and looking for jobs/, 10_000);

    expect(embeddedPostgresRunning(dataDir)).toBe(true);
    // Migrations ran on that database: ours and graphile-worker's.
    const url = readFileSync(path.join(dataDir, 'postgres.url'), 'utf8');
    expect(new URL(url).hostname).toBe('127.0.0.1');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const ours = await client.query<{ name: string }>('SELECT name FROM kysely_migration');
      expect(ours.rows.map((r) => r.name)).toContain('0001_foundation');
      const worker = await client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = 'graphile_worker'");
      expect(worker.rowCount).toBe(1);
    } finally {
      await client.end();
    }

    const signup = await post(port, '/auth/signup', { email, password });
    expect(signup.status, await signup.clone().text()).toBe(201);
    firstCookie = sessionCookie(signup.headers.getSetCookie());
  });

  it('on SIGTERM finishes an in-flight request, stops PostgreSQL and exits 0', { timeout: 60_000 }, async () => {
    if (!first) throw new Error('needs the server of the previous test');
    const server = first;
    const pgPid = postmasterPid(dataDir);
    expect(pgPid && isAlive(pgPid)).toBe(true);

    // A valid login padded with ~200 KB of JSON whitespace (no extra field: unknown fields are
    // refused), sent over ~1 s; SIGTERM arrives half-way.
    const body = `{${' '.repeat(200_000)}${JSON.stringify({ email, password }).slice(1)}`;
    let signalledAt = 0;
    const res = await slowPost(`http://127.0.0.1:${port}/auth/login`, body, {
      chunks: 20,
      intervalMs: 50,
      midway: async () => {
        server.child.kill('SIGTERM');
        signalledAt = Date.now();
        await server.waitForLog(/^shutting down/, 5000);
      },
    });
    // Answered in full after shutdown began, with the database still there to check the password.
    expect(signalledAt).toBeGreaterThan(0);
    expect(res.status, res.body).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ email });
    expect(res.connection).toBe('close'); // the client is told not to reuse the connection

    // Promptly, although the client would keep its connection open for a minute: a shutdown
    // waiting on it would take 60 s (or fastify's 72 s keep-alive). 30 s leaves a loaded machine
    // time to stop PostgreSQL (a checkpoint; ~1-2 s here) and still tells the two apart.
    expect(await server.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(server.logMessages()).toContain('stopped');
    expect(server.stderr()).toBe('');
    expect(isAlive(pgPid ?? 0)).toBe(false);
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('a second start on the same DATA_DIR reuses the data: the account and its session survive', { timeout: 60_000 }, async () => {
    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    const second = startServer({ PORT: String(port), DATA_DIR: dataDir });
    expect(await second.waitForHealth(30_000)).toEqual({ status: 'ok' });

    const login = await post(port, '/auth/login', { email, password });
    expect(login.status, await login.clone().text()).toBe(200);
    // The generated SECRET was kept too: the first run's cookie is still valid.
    const me = await fetch(`http://127.0.0.1:${port}/users/@me`, { headers: { cookie: firstCookie }, signal: AbortSignal.timeout(10_000) });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email });

    second.child.kill('SIGTERM');
    expect(await second.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(embeddedPostgresRunning(dataDir)).toBe(false);
  });
});

describe('SIGTERM while the server is still starting', () => {
  afterAll(() => cleanupServers({ removeTemp: true }));

  it('lets the start reach a point it can undo, then stops PostgreSQL and exits 0', { timeout: 60_000 }, async () => {
    const server = startServer({ PORT: String(await freePort()) });
    // postgres.url is written once the embedded PostgreSQL runs, before migrations.
    const urlFile = path.join(server.dataDir, 'postgres.url');
    const deadline = Date.now() + 45_000;
    while (!existsSync(urlFile)) {
      if (server.child.exitCode !== null || Date.now() > deadline) throw new Error(`embedded PostgreSQL never started\n${server.stderr()}`);
      await sleep(10);
    }
    const pgPid = postmasterPid(server.dataDir);
    expect(pgPid && isAlive(pgPid)).toBe(true);
    server.child.kill('SIGTERM');

    expect(await server.waitForExit(30_000)).toEqual({ code: 0, signal: null });
    expect(isAlive(pgPid ?? 0)).toBe(false);
    expect(embeddedPostgresRunning(server.dataDir)).toBe(false);
  });
});

describe('SIGTERM after the embedded PostgreSQL died', () => {
  afterAll(() => cleanupServers({ removeTemp: true }));

  it('still shuts down in order: logs "stopped" and exits 0', { timeout: 60_000 }, async () => {
    const server = startServer({ PORT: String(await freePort()) });
    await server.waitForHealth(45_000);
    const pgPid = postmasterPid(server.dataDir);
    if (!pgPid) throw new Error('no postmaster.pid');
    process.kill(pgPid, 'SIGKILL');
    for (let i = 0; i < 100 && isAlive(pgPid); i++) await sleep(50);
    expect(isAlive(pgPid)).toBe(false);

    server.child.kill('SIGTERM');
    expect(await server.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(server.logMessages()).toContain('stopped');
  });
});
