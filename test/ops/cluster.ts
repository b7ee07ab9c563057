import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { runCli } from '../helpers/cli.js';
import { cleanupServers, freePort, startServer, type ServerProcess } from '../helpers/process.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { startOutageProxy, type OutageProxy } from './outage-proxy.js';

// The deployment of docs/operations.md "Processes", on one machine: one PostgreSQL started from the
// embedded binaries as a standalone server, Redis when redis-server is installed, an SMTP sink
// (behind a proxy that can refuse connections), and ROLE=api / ROLE=worker server processes
// (src/server.ts, spawned as the other process tests spawn it), all on loopback.

export const CLUSTER_SECRET = 'cluster-secret-0123456789abcdefghijklmnopqrstuvwxyz';

export interface ClusterOptions {
  apis: number;
  workers: number;
  /** Extra environment of every process. */
  env?: Record<string, string>;
  /** Extra environment of the worker processes only. */
  workerEnv?: Record<string, string>;
  /** The checkout the API processes run from (another release's); this project by default. */
  apiRoot?: string;
}

type Role = 'api' | 'worker';

export interface Cluster {
  readonly databaseUrl: string;
  readonly redisUrl: string | undefined;
  readonly sink: SmtpSink;
  /** Between the workers and the sink: `outage(ms)` refuses and cuts every SMTP connection for a while. */
  readonly smtp: OutageProxy;
  /** The processes now running (replacements included), by role. */
  readonly apis: ServerProcess[];
  readonly workers: ServerProcess[];
  /** Every process started so far, replaced ones included (their logs stay readable). */
  readonly started: { role: Role; proc: ServerProcess }[];
  /** The API base URLs; `base(i)` alternates between them. */
  base(i: number): string;
  /** Starts a process of `role` and waits until it is ready. */
  add(role: Role): Promise<ServerProcess>;
  /** SIGKILLs `proc` and starts its replacement (same role and environment), ready when this resolves. */
  replace(proc: ServerProcess): Promise<ServerProcess>;
  /** SIGTERMs `proc` (a graceful stop: drain) and resolves with its exit. */
  terminate(proc: ServerProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Stops PostgreSQL (fast shutdown: connections cut), and starts it again on the same port and data. */
  stopDatabase(): Promise<void>;
  startDatabase(): Promise<void>;
  /** A query on the cluster's database (on connections of the test's own). */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  /** `npm run admin -- …` against the cluster's database. */
  admin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

/** Starts the database, Redis (when installed), the sink, then the API and worker processes at once. */
export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const root = mkdtempSync(path.join(tmpdir(), 'mailplatform-cluster-'));
  const dbDir = path.join(root, 'postgres');
  let database: EmbeddedDatabase | undefined = await startEmbeddedPostgres({ dir: dbDir });
  const databaseUrl = database.url;
  const dbPort = Number(new URL(databaseUrl).port);
  const redis = hasRedis() ? await startRedis() : undefined;
  const sink = await startSmtpSink({ keepRaw: false });
  const smtp = await startOutageProxy(sink.port);
  const client = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  client.on('error', () => undefined); // idle connections cut by a database restart
  const common = {
    DATABASE_URL: databaseUrl,
    SECRET: CLUSTER_SECRET,
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    ...(redis ? { REDIS_URL: redis.url } : {}),
    ...opts.env,
  };
  const apis: ServerProcess[] = [];
  const workers: ServerProcess[] = [];
  const started: { role: Role; proc: ServerProcess }[] = [];
  let n = 0;
  // As a supervisor (systemd, compose `restart: always`) runs them: a process that exits while
  // starting (a database down refuses the start with one line, exit 1) is started again.
  const add = async (role: Role): Promise<ServerProcess> => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      const port = await freePort();
      const env = { ...common, ...(role === 'worker' ? opts.workerEnv : {}), ROLE: role, PORT: String(port), DATA_DIR: path.join(root, `${role}-${n++}`) };
      const proc = startServer(env, { root: role === 'api' ? opts.apiRoot : undefined });
      started.push({ role, proc });
      try {
        if (role === 'api') await proc.waitForHealth(Math.max(1000, deadline - Date.now()));
        else await proc.waitForLog(/^ready: worker running$/, Math.max(1000, deadline - Date.now()));
      } catch (err) {
        if (proc.child.exitCode === null || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      (role === 'api' ? apis : workers).push(proc);
      return proc;
    }
  };
  const stopAll = async () => {
    await cleanupServers();
    await client.end();
    await smtp.close();
    await sink.close();
    await redis?.stop();
    await database?.stop();
    rmSync(root, { recursive: true, force: true });
  };
  try {
    await Promise.all([...Array.from({ length: opts.apis }, () => add('api')), ...Array.from({ length: opts.workers }, () => add('worker'))]);
  } catch (err) {
    // No cluster to stop in the caller's afterAll: nothing of this one may outlive the test.
    await stopAll();
    throw err;
  }
  return {
    databaseUrl,
    redisUrl: redis?.url,
    sink,
    smtp,
    apis,
    workers,
    started,
    base: (i) => `http://127.0.0.1:${apis[i % apis.length]?.port ?? 0}`,
    add,
    async replace(proc) {
      const role = started.find((s) => s.proc === proc)?.role;
      if (!role) throw new Error('not a process of this cluster');
      const list = role === 'api' ? apis : workers;
      const at = list.indexOf(proc);
      if (at >= 0) list.splice(at, 1);
      proc.child.kill('SIGKILL');
      await proc.exited;
      return add(role);
    },
    async terminate(proc) {
      proc.child.kill('SIGTERM');
      const exit = await proc.waitForExit(60_000);
      for (const list of [apis, workers]) if (list.includes(proc)) list.splice(list.indexOf(proc), 1);
      return exit;
    },
    async stopDatabase() {
      await database?.stop();
      database = undefined;
    },
    async startDatabase() {
      database = await startEmbeddedPostgres({ dir: dbDir, port: dbPort });
    },
    async query(sql, params) {
      return (await client.query(sql, params)).rows;
    },
    admin: (args) => runCli(args, { dataDir: path.join(root, 'cli'), env: { DATABASE_URL: databaseUrl, SECRET: CLUSTER_SECRET } }),
    stop: stopAll,
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface CallOptions {
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
  form?: FormData;
}

/** One HTTP call to API `i` (alternating); throws on a network error. */
export async function call(cluster: Cluster, i: number, method: string, url: string, opts: CallOptions = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${cluster.base(i)}${url}`, {
    method,
    headers,
    body: opts.form ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** {@link call}, which must answer 2xx: its body. */
export async function ok(cluster: Cluster, i: number, method: string, url: string, opts: CallOptions = {}): Promise<Record<string, unknown>> {
  const res = await call(cluster, i, method, url, opts);
  if (res.status >= 300) throw new Error(`${method} ${url} via API ${i % 2}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** `count` calls of `fn(i)`, at most `concurrency` at a time. */
export async function inParallel<T>(count: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array<T>(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await fn(i);
      }
    }),
  );
  return results;
}

export interface ClusterProject {
  id: string;
  secret: string;
  publicKey: string;
  domain: string;
}

/** A user signed up through one API, a project made through the other, and `domain` verified (CLI). */
export async function setUpProject(cluster: Cluster, domain: string): Promise<ClusterProject> {
  const signup = await fetch(`${cluster.base(0)}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `owner-${randomUUID()}@example.com`, password: 'a long cluster password' }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
  const cookie = signup.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const project = await ok(cluster, 1, 'POST', '/users/@me/projects', { body: { name: 'cluster' }, headers: { cookie } });
  const secret = String(project.secret);
  await ok(cluster, 0, 'POST', '/domains', { key: secret, body: { domain } });
  const verified = await cluster.admin(['verify-domain', '--domain', domain, '--project', String(project.id)]);
  if (verified.code !== 0) throw new Error(`verify-domain: ${verified.stderr}`);
  return { id: String(project.id), secret, publicKey: String(project.public), domain };
}
