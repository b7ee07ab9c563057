// Shared by the delivery benchmarks (send.mjs, campaign.mjs): processes, CPU accounting, the
// server under test, a project with a verified sender domain, and the whole stage around a
// phase (`withDeliveryBench`). Run them with `--import tsx`.
import { spawn } from 'node:child_process';
import console from 'node:console';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { generateDkimKey } from '../../src/modules/domains/dkim-keys.ts';
import pg from 'pg';
import { startDnsServer } from '../../test/helpers/dns-server.ts';
import { startSmtpSink } from '../../test/helpers/smtp-sink.ts';
import { freePort, postgresCpuBelow } from './proc.mjs';

export { cpuSeconds, freePort, processes } from './proc.mjs';

export const SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const root = process.cwd();
const fetch = globalThis.fetch;
/** CPU seconds of the PostgreSQL started by the API process (postmaster, its reaped children, live backends). */
export const postgresCpu = postgresCpuBelow;

/**
 * What `npm start` runs (package.json `start`: the compiled server, rebuilt first when src/
 * changed), without npm: `node <its flags> scripts/start.mjs`.
 */
const START_WORDS = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start.split(/\s+/);
export const START_ARGS = START_WORDS.slice(START_WORDS.indexOf('node') + 1);

/** Spawns the server as `npm start` runs it, with `env`; resolves once `readyPattern` is logged. */
export async function spawnServer(env, readyPattern, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, ...START_ARGS], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (out = (out + c).slice(-200_000)));
  const deadline = Date.now() + 120_000;
  while (!readyPattern.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}\n${out}`);
    if (Date.now() > deadline) throw new Error(`server not ready within 120 s\n${out}`);
    await sleep(50);
  }
  return {
    pid: child.pid,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
    },
  };
}

export async function json(res, expected) {
  if (res.status !== expected) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return res.json();
}

export async function createProject(base) {
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'bench password 123' }),
  });
  await json(signup, 201);
  const cookie = signup.headers.get('set-cookie').split(';')[0];
  return json(await fetch(`${base}/users/@me/projects`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'bench' }) }), 201);
}

export async function addVerifiedDomain(client, projectId, domain) {
  const key = await generateDkimKey();
  await client.query(
    `INSERT INTO domains (project_id, domain, dkim_selector, dkim_public_key, dkim_private_key, verified, verified_at) VALUES ($1, $2, 'bench', $3, $4, true, now())`,
    [projectId, domain, key.publicKey, createSecretBox(SECRET, 'dkim').seal(key.privateKeyPem)],
  );
  return key;
}

/**
 * The delivery benchmarks' stage: an SMTP sink and a DNS server (in this process), the server as
 * `ROLE=api` on a temp DATA_DIR (embedded PostgreSQL, SMTP_URL = the sink + `smtpQuery`), a
 * project with a verified sender domain whose DKIM record the DNS server publishes. Runs
 * `phase(ctx)`, then tears everything down, temp folder included.
 */
export async function withDeliveryBench({ name, smtpQuery, keepRaw = true, pgStats = false, apiNodeArgs = [] }, phase) {
  const tmp = mkdtempSync(path.join(tmpdir(), `bench-${name}-`));
  chmodSync(tmp, 0o755);
  const sink = await startSmtpSink({ keepRaw });
  // Serves the bench domain's DKIM record: the 5-minute domain re-check of the worker finds it published.
  const dns = await startDnsServer();
  const port = await freePort();
  const env = {
    ...process.env, DNS_SERVERS: dns.address, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'),
    LOG_LEVEL: 'info', SECRET, RATE_LIMIT_PER_MINUTE: '10000000', SMTP_URL: `${sink.url}${smtpQuery ? `?${smtpQuery}` : ''}`,
  };
  for (const variable of ['DATABASE_URL', 'ROLE', 'PUBLIC_URL', 'REDIS_URL']) delete env[variable];
  let api;
  let client;
  try {
    api = await spawnServer({ ...env, ROLE: 'api' }, /ready: API/, apiNodeArgs);
    let databaseUrl = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
    client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    if (pgStats) {
      // pg_stat_statements needs a restart of PostgreSQL (shared_preload_libraries): the API is restarted once.
      await client.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
      await client.query(`ALTER SYSTEM SET pg_stat_statements.track = 'all'`);
      await client.query(`ALTER SYSTEM SET pg_stat_statements.track_planning = on`);
      await client.end();
      await api.stop();
      api = await spawnServer({ ...env, ROLE: 'api' }, /ready: API/, apiNodeArgs);
      databaseUrl = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
      client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    }
    const base = `http://127.0.0.1:${port}`;
    const project = await createProject(base);
    const domain = 'bench-sender.example';
    const key = await addVerifiedDomain(client, project.id, domain);
    dns.set(`bench._domainkey.${domain}`, { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey}`] });
    console.log(`machine: ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm).length} CPUs, node ${process.version}; SMTP_URL ${env.SMTP_URL}`);
    await phase({ api, base, client, databaseUrl, domain, env, key, project, sink, pgStats: pgStats ? pgStatsOf(client) : undefined });
  } finally {
    await client?.end().catch(() => undefined);
    await api?.stop();
    await sink.close();
    await dns.close();
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** With `pgStats`: `reset()`, then `print(label)` the statements that took PostgreSQL the most time since. */
function pgStatsOf(client) {
  return {
    reset: () => client.query('SELECT pg_stat_statements_reset()'),
    async print(label, per) {
      const { rows } = await client.query(`
        SELECT calls, round(total_exec_time)::int AS ms, round(total_plan_time)::int AS plan_ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 100) AS query
        FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY total_exec_time + total_plan_time DESC LIMIT 30`);
      console.log(`\n    pg_stat_statements (${label}): execution ms, planning ms, calls, rows${per ? `; µs per ${per.unit} (execution + planning)` : ''}`);
      for (const r of rows) {
        const perUnit = per ? `${String(Math.round(((r.ms + r.plan_ms) * 1000) / per.count)).padStart(5)} µs ` : '';
        console.log(`      ${String(r.ms).padStart(7)} ms ${String(r.plan_ms).padStart(6)} ms ${perUnit}${String(r.calls).padStart(7)} calls ${String(r.rows).padStart(8)} rows  ${r.query}`);
      }
    },
  };
}
