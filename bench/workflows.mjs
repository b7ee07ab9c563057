// Workflow benchmarks (issue 10), not tests: numbers depend on the machine and on what else runs
// on it. Three modes, each against the server as `npm start` runs it (the compiled server: API
// and worker in one process, embedded PostgreSQL on a temp DATA_DIR) from this separate process:
//
//   node --import tsx bench/workflows.mjs --mode track    # /v1/track with 20 enabled workflows vs none (A/B)
//   node --import tsx bench/workflows.mjs --mode steps    # 50,000 enrolled: TRIGGER → CONDITION → SEND_EMAIL → DELAY 1 min → UPDATE_CONTACT
//   node --import tsx bench/workflows.mjs --mode wait     # 100,000 WAITING on one event, 10,000 of them fire it
//
//   quick smoke runs: --mode steps --contacts 2000 · --mode wait --executions 5000 --fire 500
//                     --mode track --duration 5 --warmup 2 --rounds 1
//
// Every loop is bounded in count and time (--timeout, seconds, per waiting phase). Progress and
// results are read from the server's PostgreSQL with read-only queries, and mail is counted at an
// SMTP sink in this process. See bench/workflows.md for what each mode measures and the results.
import { spawn } from 'node:child_process';
import console from 'node:console';
import { chmodSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { clearTimeout, setTimeout } from 'node:timers';
import { Buffer } from 'node:buffer';
import { URL } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { cpuSeconds, createProject, freePort, postgresCpu, START_ARGS } from './lib/harness.mjs';
import { startSmtpSink } from '../test/helpers/smtp-sink.ts';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const flag = (name) => process.argv.includes(`--${name}`);
const opts = {
  mode: arg('mode', ''),
  connections: Number(arg('connections', '50')),
  logLevel: arg('log-level', 'info'),
  /** Seconds any one waiting phase may last before the run gives up (and reports what it saw). */
  timeout: Number(arg('timeout', '1800')),
  /** Writes a V8 CPU profile of the server process into this folder (on its exit). */
  cpuProf: arg('cpu-prof', undefined),
  keep: flag('keep'),
  // track
  duration: Number(arg('duration', '20')),
  warmup: Number(arg('warmup', '5')),
  rounds: Number(arg('rounds', '2')),
  /** Only one arm per round: `none` or `workflows` (e.g. with --cpu-prof). */
  only: arg('only', undefined),
  /** Distinct contacts the load cycles through (track.mjs's default); 0 = a new contact per request. */
  emails: Number(arg('emails', '10000')),
  // steps
  contacts: Number(arg('contacts', '50000')),
  /** Every Nth contact has plan "free" (the CONDITION's no branch: no email); 0 = none. */
  freeEvery: Number(arg('free-every', '10')),
  delayMinutes: Number(arg('delay-minutes', '1')),
  /**
   * The engine alone: the server runs as ROLE=api (embedded PostgreSQL) and a ROLE=worker
   * process against its database starts once the burst is accepted, so the steps are timed
   * from a queue of enrolments instead of at the pace of the track burst.
   */
  split: flag('split'),
  // wait
  executions: Number(arg('executions', '100000')),
  fire: Number(arg('fire', '10000')),
};
if (!['track', 'steps', 'wait'].includes(opts.mode)) {
  console.error('usage: node --import tsx bench/workflows.mjs --mode track|steps|wait [options] (see the header of this file)');
  process.exit(2);
}
const fetch = globalThis.fetch;
const root = process.cwd();
const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : String(n));
const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN);

function machine() {
  const mem = Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024 / 1024;
  return `${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim()}), ${mem.toFixed(0)} GiB RAM, node ${process.version}, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`;
}

/** VmHWM (peak resident set) of a process, in MiB. */
function peakRss(pid) {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  } catch {
    return NaN;
  }
}

/**
 * The server as `npm start` runs it (node with package.json's start arguments, no ROLE: API + worker), on a temp
 * DATA_DIR with a free port; node is spawned directly so its pid is the server's (CPU, RSS,
 * --cpu-prof). Its log goes to a file in the temp folder (kept with --keep).
 */
async function startServer(extraEnv) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-workflows-'));
  chmodSync(tmp, 0o755); // the embedded PostgreSQL runs as `postgres` and must reach its folder
  const port = await freePort();
  const env = { ...process.env };
  for (const name of ['DATABASE_URL', 'ROLE', 'SECRET', 'PUBLIC_URL', 'REDIS_URL', 'SMTP_URL']) delete env[name];
  Object.assign(env, {
    PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: opts.logLevel,
    RATE_LIMIT_PER_MINUTE: '10000000', ...extraEnv,
  });
  const logFile = path.join(tmp, 'server.log');
  const logFd = openSync(logFile, 'a');
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.cpuProf)}`] : [];
  const child = spawn(process.execPath, [...prof, ...START_ARGS], { cwd: root, env, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      const log = readFileSync(logFile, 'utf8').slice(-4000);
      if (!opts.keep) rmSync(tmp, { recursive: true, force: true });
      throw new Error(`server exited with ${child.exitCode}:\n${log}`);
    }
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGTERM');
      throw new Error(`server did not become healthy within 120 s (log and data kept in ${tmp})`);
    }
    await sleep(100);
  }
  const databaseUrl = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
  const client = new pg.Client({ connectionString: databaseUrl, application_name: 'bench-workflows (read-only)' });
  await client.connect();
  // Read-only session: the bench observes, the product writes.
  await client.query('SET default_transaction_read_only = on');
  return {
    base, pid: child.pid, client, tmp, env, databaseUrl, logFile,
    async stop() {
      await client.end().catch(() => undefined);
      const exited = new Promise((r) => child.once('exit', r));
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, sleep(60_000)]);
      if (opts.keep) console.log(`kept ${tmp}`);
      else rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** A ROLE=worker process on the server's database (the scaled-out deployment of docs/operations.md). */
async function startWorker(server) {
  const logFd = openSync(server.logFile.replace(/server\.log$/, 'worker.log'), 'a');
  const prof = opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.cpuProf)}`] : [];
  const env = { ...server.env, ROLE: 'worker', DATABASE_URL: server.databaseUrl };
  const child = spawn(process.execPath, [...prof, ...START_ARGS], { cwd: root, env, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  return {
    pid: child.pid,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, sleep(60_000)]);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The product's API, as a user calls it (secret key of the project).

function api(base, secret) {
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const call = async (method, url, body, expected) => {
    const res = await fetch(`${base}${url}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!expected.includes(res.status)) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    const text = await res.text();
    const parsed = text ? JSON.parse(text) : {};
    // Dashboard routes answer the resource itself; a few wrap it in {data}.
    return parsed && typeof parsed === 'object' && 'data' in parsed && parsed.data && typeof parsed.data === 'object' && !Array.isArray(parsed.data) ? parsed.data : parsed;
  };
  return {
    post: (url, body) => call('POST', url, body, [200, 201]),
    patch: (url, body) => call('PATCH', url, body, [200]),
    get: (url) => call('GET', url, undefined, [200]),
  };
}

/**
 * Creates a workflow through the API: TRIGGER (created with it) → steps in order, with the given
 * branch on each transition, then enables it. `chain`: [{type, config, branch?}] where branch is
 * the branch of the transition INTO that step. Returns {id, steps: [{id, type}]} (TRIGGER first).
 */
async function createWorkflow(client, { name, eventName, chain, allowReentry }) {
  const wf = await client.post('/workflows', { name, eventName, ...(allowReentry === undefined ? {} : { allowReentry }) });
  const full = wf.steps ? wf : await client.get(`/workflows/${wf.id}`);
  const trigger = full.steps.find((s) => s.type === 'TRIGGER');
  if (!trigger) throw new Error(`workflow ${wf.id} has no TRIGGER step: ${JSON.stringify(full)}`);
  const steps = [{ id: trigger.id, type: 'TRIGGER' }];
  for (const [i, s] of chain.entries()) {
    const step = await client.post(`/workflows/${wf.id}/steps`, { type: s.type, name: `${s.type.toLowerCase()} ${i + 1}`, config: s.config, position: { x: 0, y: (i + 1) * 120 } });
    await client.post(`/workflows/${wf.id}/transitions`, { fromStepId: steps.at(-1).id, toStepId: step.id, ...(s.branch ? { branch: s.branch } : {}) });
    steps.push({ id: step.id, type: s.type });
  }
  await client.patch(`/workflows/${wf.id}`, { enabled: true });
  return { id: wf.id, steps };
}

/** A project with a sender domain verified by the operator CLI (`npm run admin -- verify-domain`). */
async function verifiedSender(server, project, domain) {
  const c = api(server.base, project.secret);
  await c.post('/domains', { domain });
  const out = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/admin.ts', 'verify-domain', '--domain', domain, '--project', project.id], {
      cwd: root, env: { ...server.env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(text.trim());
      else reject(new Error(`admin verify-domain exited ${code}: ${text}`));
    });
  });
  console.log(`  ${out.split('\n').at(-1)}`);
}

// ---------------------------------------------------------------------------------------------
// Load generators.

/**
 * POST /v1/track of `total` bodies (`bodyOf(i)`, each index once) over `connections` keep-alive
 * connections. A 503/429 (never performed) is retried after 200 ms, at most 20 times; anything
 * else that is not 200 is counted as failed. Bounded by `deadlineMs`.
 */
async function burst(base, key, total, bodyOf, deadlineMs) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const post = (body) =>
    new Promise((resolve) => {
      const req = http.request(
        { host: url.hostname, port: url.port, path: '/v1/track', method: 'POST', agent, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode, text }));
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
      req.on('error', (err) => resolve({ status: 0, text: err.message }));
      req.end(body);
    });
  let next = 0;
  let ok = 0;
  let retries = 0;
  let lastOkAt = 0;
  const failed = [];
  const started = performance.now();
  const loop = async () => {
    while (next < total && Date.now() < deadlineMs) {
      const i = next++;
      const body = JSON.stringify(bodyOf(i));
      for (let attempt = 0; ; attempt++) {
        const r = await post(body);
        if (r.status === 200) {
          ok++;
          lastOkAt = Date.now();
          break;
        }
        if ((r.status === 503 || r.status === 429) && attempt < 20 && Date.now() < deadlineMs) {
          retries++;
          await sleep(200);
          continue;
        }
        failed.push({ i, status: r.status, text: r.text.slice(0, 200) });
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, loop));
  agent.destroy();
  const seconds = (performance.now() - started) / 1000;
  return { ok, failed, retries, seconds, lastOkAt, sent: next };
}

/** Polls `probe()` every `everyMs` until `done(value)` or --timeout; returns the last value and whether it finished. */
async function until(label, probe, done, everyMs = 1000, report = undefined) {
  const started = performance.now();
  let value;
  let lastReport = 0;
  for (;;) {
    value = await probe();
    if (done(value)) return { value, ok: true, seconds: (performance.now() - started) / 1000 };
    const elapsed = (performance.now() - started) / 1000;
    if (elapsed > opts.timeout) {
      console.log(`  ${label}: gave up after ${opts.timeout} s: ${JSON.stringify(value)}`);
      return { value, ok: false, seconds: elapsed };
    }
    if (report && elapsed - lastReport >= 10) {
      lastReport = elapsed;
      console.log(`  … ${label} ${elapsed.toFixed(0)} s: ${report(value)}`);
    }
    await sleep(everyMs);
  }
}

const executionStatuses = async (client, projectId, workflowId) => {
  const { rows } = await client.query(
    `SELECT status, count(*)::int AS n FROM workflow_executions WHERE project_id = $1 AND workflow_id = $2 GROUP BY status`,
    [projectId, workflowId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
};

/**
 * Work due within 5 s (jobs queued or running, e.g. the enrolment job keyed per project and due
 * 200 ms after the events that queued it) plus events queued for enrolment when the engine keeps
 * such a queue (migration 0018): 0 once the worker has caught up. Delays and wait timeouts, due
 * later, do not count.
 */
const dueJobs = async (client) =>
  (
    await client.query(
      `SELECT (SELECT count(*) FROM graphile_worker._private_jobs WHERE run_at <= now() + interval '5 seconds' AND attempts < max_attempts)::int
            + CASE WHEN to_regclass('workflow_event_queue') IS NULL THEN 0
                   ELSE (xpath('/row/n/text()', query_to_xml('SELECT count(*) AS n FROM workflow_event_queue', false, true, '')))[1]::text::int END AS n`,
    )
  ).rows[0].n;

// ---------------------------------------------------------------------------------------------
// Mode track: POST /v1/track with 20 enabled workflows in the project vs none.

const TRACKED = 'signed-up';
const PLANS = ['free', 'pro', 'team'];

/** autocannon with track.mjs's body; `amount` requests when given, else `seconds`. */
function trackLoad(base, key, seconds, offset, amount = undefined) {
  let n = 0;
  return autocannon({
    url: base,
    connections: opts.connections,
    ...(amount ? { amount } : { duration: seconds }),
    requests: [
      {
        method: 'POST',
        path: '/v1/track',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        // bench/track.mjs's request, with one event name (the one 5 of the workflows are triggered by).
        setupRequest: (req) => {
          const i = offset + n++;
          const email = opts.emails > 0 ? `user${i % opts.emails}@example.com` : `user${i}@example.com`;
          const body = {
            email,
            event: TRACKED,
            data: { plan: PLANS[i % PLANS.length], visits: i, source: i % 7 === 0 ? null : 'bench', order: { value: `o-${i}`, persistent: false } },
          };
          return { ...req, body: JSON.stringify(body) };
        },
      },
    ],
  });
}

async function trackArm(server, withWorkflows) {
  const project = await createProject(server.base);
  const c = api(server.base, project.secret);
  let workflows = 0;
  if (withWorkflows) {
    // 5 triggered by the tracked name, 15 by names this load never sends; each TRIGGER → DELAY 1 day.
    for (let k = 0; k < 20; k++) {
      await createWorkflow(c, { name: `wf ${k}`, eventName: k < 5 ? TRACKED : `other-event-${k}`, chain: [{ type: 'DELAY', config: { amount: 1, unit: 'days' } }] });
      workflows++;
    }
  }
  const executions = async () => (await server.client.query(`SELECT count(*)::int AS n FROM workflow_executions WHERE project_id = $1`, [project.id])).rows[0].n;
  // Idle twice in a row, 1 s apart (a keyed job may be re-added between two looks).
  const idle = async () => {
    let quiet = 0;
    return until('worker catching up', () => dueJobs(server.client), (n) => (n === 0 ? ++quiet >= 2 : (quiet = 0) > 0), 1000, (n) => `${n} jobs due or events queued`);
  };
  // Each arm's contacts are new (a fresh project). With --emails N, one pass of N requests (each
  // contact once) enrols them all before the measured window; then the timed warm-up, then the
  // worker drains, so the window starts idle and (allowReentry false) enrols no one.
  if (opts.emails > 0) await trackLoad(server.base, project.public, 0, 0, opts.emails);
  if (opts.warmup > 0) await trackLoad(server.base, project.public, opts.warmup, 0);
  const drainedWarm = await idle();
  const ex0 = await executions();
  const cpu0 = { node: cpuSeconds(server.pid), pg: postgresCpu(server.pid) };
  const r = await trackLoad(server.base, project.public, opts.duration, 1_000_000);
  const cpu = { node: cpuSeconds(server.pid) - cpu0.node, pg: postgresCpu(server.pid) - cpu0.pg };
  await sleep(500);
  const ex1 = await executions();
  // The work the run left for the worker (enrolments and TRIGGER → DELAY steps), drained before the next arm.
  const drained = await idle();
  const ex2 = await executions();
  const result = {
    arm: withWorkflows ? `${workflows} workflows` : 'no workflows',
    reqs: r['2xx'] / r.duration,
    p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors,
    cpuNode: cpu.node, cpuPg: cpu.pg, duration: r.duration, cpuPerRequest: ((cpu.node + cpu.pg) / r['2xx']) * 1000,
    enrolledInWindow: ex1 - ex0, enrolledAfter: ex2 - ex1, warmDrain: drainedWarm.seconds, drain: drained.seconds, executionsTotal: ex2,
  };
  console.log(
    `  ${result.arm.padEnd(13)} ${fmt(result.reqs)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  non-2xx ${result.non2xx}  errors ${result.errors}` +
      `  CPU node ${cpu.node.toFixed(1)} s postgres ${cpu.pg.toFixed(1)} s (${result.cpuPerRequest.toFixed(2)} ms per request)  executions: +${result.enrolledInWindow} in the window` +
      ` (+${result.enrolledAfter} after), ${ex2} in all; drain ${drained.seconds.toFixed(1)} s (after the warm-up ${drainedWarm.seconds.toFixed(1)} s)`,
  );
  return result;
}

async function trackMode() {
  const server = await startServer({});
  try {
    console.log(`machine: ${machine()}`);
    console.log(`mode track: ${opts.connections} connections, warm-up ${opts.warmup} s + ${opts.duration} s per arm, ${opts.rounds} rounds (ABBA), ${opts.emails > 0 ? `${opts.emails} distinct contacts` : 'a new contact per request'}, event "${TRACKED}"`);
    const results = [];
    for (let round = 0; round < opts.rounds; round++) {
      const order = round % 2 === 0 ? [false, true] : [true, false];
      for (const withWorkflows of order) {
        if (opts.only && (opts.only === 'workflows') !== withWorkflows) continue;
        results.push(await trackArm(server, withWorkflows));
      }
    }
    const mean = (arm, key) => {
      const rs = results.filter((r) => r.arm.includes('no') === (arm === 'none'));
      return rs.reduce((s, r) => s + r[key], 0) / rs.length;
    };
    const none = mean('none', 'reqs');
    const wf = mean('wf', 'reqs');
    console.log(`
  mean req/s    no workflows ${fmt(none)}  ·  20 workflows ${fmt(wf)}  ·  ratio ${(wf / none).toFixed(3)} (target ≥ 0.85)
  CPU/request   no workflows ${mean('none', 'cpuPerRequest').toFixed(3)} ms  ·  20 workflows ${mean('wf', 'cpuPerRequest').toFixed(3)} ms (server node + postgres, mean of the arms)
  server peak RSS ${fmt(peakRss(server.pid))} MiB (node process, VmHWM)`);
  } finally {
    await server.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// Mode steps: 50,000 contacts through TRIGGER → CONDITION → SEND_EMAIL → DELAY → UPDATE_CONTACT.

const BODY = `<html><body><table><tr><td><h1>Welcome {{firstName ?? there}}</h1><p>Your <b>{{plan}}</b> plan is ready.
<a href="https://app.example/start">Get started</a></p><p>Thanks for signing up.</p></td></tr></table></body></html>`;

async function stepsMode() {
  const sink = await startSmtpSink({ keepRaw: false });
  const server = await startServer({ SMTP_URL: sink.url, ...(opts.split ? { ROLE: 'api' } : {}) });
  let worker;
  try {
    console.log(`machine: ${machine()}`);
    const { client } = server;
    const project = await createProject(server.base);
    const c = api(server.base, project.secret);
    const domain = 'bench-workflows.example';
    await verifiedSender(server, project, domain);
    const template = await c.post('/templates', { name: 'welcome', from: `hello@${domain}`, subject: 'Welcome {{firstName ?? there}}', body: BODY, type: 'TRANSACTIONAL' });
    const wf = await createWorkflow(c, {
      name: 'onboarding',
      eventName: 'signup',
      chain: [
        { type: 'CONDITION', config: { field: 'data.plan', operator: 'equals', value: 'pro' } },
        { type: 'SEND_EMAIL', config: { templateId: template.id }, branch: 'yes' },
        { type: 'DELAY', config: { amount: opts.delayMinutes, unit: 'minutes' } },
        { type: 'UPDATE_CONTACT', config: { updates: { onboarded: true } } },
      ],
    });
    const isFree = (i) => opts.freeEvery > 0 && i % opts.freeEvery === opts.freeEvery - 1;
    const expectedMail = Array.from({ length: opts.contacts }, (_, i) => i).filter((i) => !isFree(i)).length;
    console.log(`mode steps: ${opts.contacts} contacts (${expectedMail} with plan "pro", the rest "free"), workflow ${wf.id}, DELAY ${opts.delayMinutes} min; POST /v1/track "signup" × ${opts.contacts}, ${opts.connections} connections`);

    const cpu0 = { node: cpuSeconds(server.pid), pg: postgresCpu(server.pid), bench: process.cpuUsage() };
    const startedAt = Date.now();
    const deadline = Date.now() + opts.timeout * 1000;
    const b = await burst(server.base, project.public, opts.contacts, (i) => ({ email: `member${i}@example.com`, event: 'signup', data: { firstName: `Member${i}`, plan: isFree(i) ? 'free' : 'pro' } }), deadline);
    console.log(`  burst: ${b.ok} accepted in ${b.seconds.toFixed(1)} s (${fmt(b.ok / b.seconds)}/s), ${b.failed.length} failed, ${b.retries} retried 503/429${b.failed.length ? ` e.g. ${JSON.stringify(b.failed[0])}` : ''}`);

    // --split: the worker starts now; the steps are timed from here (the burst is a queue).
    const workerAt = Date.now();
    if (opts.split) {
      worker = await startWorker(server);
      console.log(`  worker (ROLE=worker, pid ${worker.pid}) started ${((workerAt - startedAt) / 1000).toFixed(1)} s after the first track`);
    }
    const cpuW0 = worker ? cpuSeconds(worker.pid) : 0;
    const total = b.ok;
    const done = await until('executions', () => executionStatuses(client, project.id, wf.id), (s) => (s.COMPLETED ?? 0) + (s.EXITED ?? 0) + (s.FAILED ?? 0) + (s.CANCELLED ?? 0) >= total, 2000, (s) => JSON.stringify(s));
    const finishedAt = Date.now();
    const cpu = { node: cpuSeconds(server.pid) - cpu0.node, pg: postgresCpu(server.pid) - cpu0.pg, worker: worker ? cpuSeconds(worker.pid) - cpuW0 : 0 };
    // Mail: every workflow email final, then the sink idle.
    const emailsFinal = await until(
      'emails',
      async () => (await client.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE status IN ('PENDING','SENDING'))::int AS open FROM emails WHERE project_id = $1 AND workflow_execution_id IS NOT NULL`, [project.id])).rows[0],
      (r) => r.open === 0,
      2000,
      (r) => `${r.n - r.open} of ${r.n} final, ${sink.messages.length} at the sink`,
    );
    // Pooled relay connections may stay open a while after the last message: bounded, not timed.
    await until('sink', async () => sink.openConnections(), (n) => n === 0, 500);
    const lastMessage = sink.messages.reduce((t, m) => Math.max(t, m.receivedAt.getTime()), 0);

    const { rows: byType } = await client.query(
      `SELECT s.type, se.status, count(*)::int AS n,
              min(se.created_at) AS first_created, min(se.completed_at) AS first_done, max(se.completed_at) AS last_done
         FROM workflow_step_executions se JOIN workflow_steps s ON s.project_id = se.project_id AND s.id = se.step_id
        WHERE se.project_id = $1 AND se.workflow_id = $2 GROUP BY s.type, se.status`,
      [project.id, wf.id],
    );
    const { rows: perSecond } = await client.query(
      `SELECT extract(epoch FROM date_trunc('second', completed_at))::bigint AS s, count(*)::int AS n
         FROM workflow_step_executions WHERE project_id = $1 AND workflow_id = $2 AND completed_at IS NOT NULL GROUP BY 1 ORDER BY 1`,
      [project.id, wf.id],
    );
    const completedOf = (types) => byType.filter((r) => types.includes(r.type) && r.status === 'COMPLETED');
    const span = (rows, from) => {
      const start = from ?? Math.min(...rows.map((r) => r.first_created.getTime()));
      const end = Math.max(...rows.map((r) => r.last_done.getTime()));
      return { start, end, n: rows.reduce((s, r) => s + r.n, 0) };
    };
    // Phase 1: from the first track sent until the last step before the delay completed.
    const t0 = opts.split ? workerAt : startedAt;
    const p1 = span(completedOf(['TRIGGER', 'CONDITION', 'SEND_EMAIL']), t0);
    // Phase 2: from the first delay that ended until the last UPDATE_CONTACT.
    const delays = completedOf(['DELAY']);
    const p2rows = completedOf(['DELAY', 'UPDATE_CONTACT']);
    const p2 = p2rows.length ? { start: Math.min(...delays.map((r) => r.first_done.getTime())), end: span(p2rows).end, n: p2rows.reduce((s, r) => s + r.n, 0) } : { start: 0, end: 0, n: 0 };
    // The engine alone: phase 1 from the first step completed (excludes the burst's first moments before any enrolment).
    const firstStep = Math.min(...completedOf(['TRIGGER']).map((r) => r.first_done.getTime()));
    const overlap = Math.max(0, Math.min(p1.end, p2.end) - Math.max(p1.start, p2.start));
    const busy = (p1.end - p1.start + (p2.end - p2.start) - overlap) / 1000;
    const steps = p1.n + p2.n;
    // Busiest 10 s of step completions.
    let best = 0;
    for (let i = 0, j = 0, sum = 0; j < perSecond.length; j++) {
      sum += perSecond[j].n;
      while (Number(perSecond[j].s) - Number(perSecond[i].s) >= 10) sum -= perSecond[i++].n;
      best = Math.max(best, sum / 10);
    }

    const statuses = done.value;
    const { rows: emails } = await client.query(`SELECT message_id, to_email, status FROM emails WHERE project_id = $1 AND workflow_execution_id IS NOT NULL`, [project.id]);
    const received = sink.messages.filter((m) => m.messageId?.endsWith(`@${domain}>`));
    const distinct = new Set(received.map((m) => m.messageId));
    const missing = emails.filter((e) => !distinct.has(e.message_id)).length;
    const perAddress = new Map();
    for (const m of received) for (const to of m.to) perAddress.set(to, (perAddress.get(to) ?? 0) + 1);
    const toFree = [...perAddress.keys()].filter((a) => isFree(Number(/^member(\d+)@/.exec(a)?.[1] ?? -1))).length;
    const proAddresses = Array.from({ length: total }, (_, i) => i).filter((i) => !isFree(i)).map((i) => `member${i}@example.com`);
    const proMissing = proAddresses.filter((a) => !perAddress.has(a)).length;
    const { rows: [updated] } = await client.query(
      `SELECT count(*) FILTER (WHERE data @> '{"onboarded": true}')::int AS onboarded, count(*)::int AS n FROM contacts WHERE project_id = $1`,
      [project.id],
    );
    const { rows: errors } = await client.query(
      `SELECT s.type, se.error, count(*)::int AS n FROM workflow_step_executions se JOIN workflow_steps s ON s.project_id = se.project_id AND s.id = se.step_id
        WHERE se.project_id = $1 AND se.workflow_id = $2 AND se.error IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 5`,
      [project.id, wf.id],
    );
    for (const e of errors) console.log(`  step errors: ${e.type} × ${e.n}: ${e.error}`);
    const typeLine = (type) => byType.filter((r) => r.type === type).map((r) => `${r.status} ${r.n}`).join(', ');
    console.log(`
  executions      ${JSON.stringify(statuses)} of ${total} enrolled${done.ok ? '' : ' (NOT all final: timed out)'}; all final ${((finishedAt - startedAt) / 1000).toFixed(1)} s after the first track
  step executions ${['TRIGGER', 'CONDITION', 'SEND_EMAIL', 'DELAY', 'UPDATE_CONTACT'].map((t) => `${t} ${typeLine(t) || '-'}`).join(' · ')}
  phase 1         ${opts.split ? 'worker start' : 'track burst'} + TRIGGER/CONDITION/SEND_EMAIL: ${fmt(p1.n)} steps in ${((p1.end - p1.start) / 1000).toFixed(1)} s from the ${opts.split ? 'worker start' : 'first track'} = ${fmt(p1.n / ((p1.end - p1.start) / 1000))} steps/s (${fmt(p1.n / ((p1.end - firstStep) / 1000))}/s from the first TRIGGER completed, ${((firstStep - p1.start) / 1000).toFixed(1)} s after the ${opts.split ? 'worker start' : 'first track'}); the burst ended ${(b.seconds).toFixed(1)} s after the first track
  phase 2         DELAY ends + UPDATE_CONTACT: ${fmt(p2.n)} steps in ${((p2.end - p2.start) / 1000).toFixed(1)} s = ${fmt(p2.n / ((p2.end - p2.start) / 1000))} steps/s (paced by when each delay ends)
  steps/s         ${fmt(steps)} step executions completed in ${busy.toFixed(1)} s outside the delay wait (phases overlap ${(overlap / 1000).toFixed(1)} s) = ${fmt(steps / busy)} steps/s (target ≥ 2,000); busiest 10 s ${fmt(best)}/s
  mail            ${emails.length} workflow emails (expected ${expectedMail}), statuses ${JSON.stringify(emails.reduce((a, e) => ({ ...a, [e.status]: (a[e.status] ?? 0) + 1 }), {}))}; all final ${emailsFinal.seconds.toFixed(1)} s after the executions; the last message reached the sink ${((lastMessage - startedAt) / 1000).toFixed(1)} s after the first track (${fmt(received.length / ((lastMessage - startedAt) / 1000))} emails/s overall)
  sink            ${received.length} messages, ${distinct.size} distinct Message-IDs, ${received.length - distinct.size} duplicates, ${missing} missing; ${[...perAddress.values()].filter((n) => n > 1).length} addresses twice; ${proMissing} "pro" contacts without mail; ${toFree} to "free" contacts
  UPDATE_CONTACT  ${updated.onboarded} of ${updated.n} contacts onboarded=true (expected ${expectedMail})
  CPU seconds     server node ${cpu.node.toFixed(1)} s${worker ? `  worker node ${cpu.worker.toFixed(1)} s` : ''}  postgres ${cpu.pg.toFixed(1)} s (first track → all executions final)  bench+sink ${((process.cpuUsage(cpu0.bench).user + process.cpuUsage(cpu0.bench).system) / 1e6).toFixed(1)} s
  server peak RSS ${fmt(peakRss(server.pid))} MiB (node process, VmHWM)`);
  } finally {
    await worker?.stop();
    await server.stop();
    await sink.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Mode wait: 100,000 executions WAITING on one event; 10,000 of the contacts fire it.

async function waitMode() {
  const server = await startServer({});
  try {
    console.log(`machine: ${machine()}`);
    const { client } = server;
    const project = await createProject(server.base);
    const c = api(server.base, project.secret);
    const wf = await createWorkflow(c, { name: 'wait for purchase', eventName: 'trial-started', chain: [{ type: 'WAIT_FOR_EVENT', config: { eventName: 'purchase', timeout: 86_400 } }] });
    const waitStep = wf.steps[1].id;
    const every = Math.max(1, Math.floor(opts.executions / opts.fire));
    const fired = Array.from({ length: opts.fire }, (_, k) => k * every).filter((i) => i < opts.executions);
    console.log(`mode wait: ${opts.executions} contacts enter TRIGGER → WAIT_FOR_EVENT("purchase", timeout 1 day), then ${fired.length} of them (every ${every}th) track "purchase"; ${opts.connections} connections`);

    const deadline = Date.now() + opts.timeout * 1000;
    const cpu0 = { node: cpuSeconds(server.pid), pg: postgresCpu(server.pid) };
    const startedAt = Date.now();
    const b = await burst(server.base, project.public, opts.executions, (i) => ({ email: `waiter${i}@example.com`, event: 'trial-started', data: { cohort: i % 7 } }), deadline);
    console.log(`  trigger burst: ${b.ok} accepted in ${b.seconds.toFixed(1)} s (${fmt(b.ok / b.seconds)}/s), ${b.failed.length} failed, ${b.retries} retried 503/429${b.failed.length ? ` e.g. ${JSON.stringify(b.failed[0])}` : ''}`);
    const waiting = await until('WAITING', () => executionStatuses(client, project.id, wf.id), (s) => (s.WAITING ?? 0) >= b.ok, 1000, (s) => JSON.stringify(s));
    const enrolSeconds = (Date.now() - startedAt) / 1000;
    const cpuEnrol = { node: cpuSeconds(server.pid) - cpu0.node, pg: postgresCpu(server.pid) - cpu0.pg };
    console.log(`  ${JSON.stringify(waiting.value)}: all ${b.ok} WAITING ${enrolSeconds.toFixed(1)} s after the first track (${fmt(b.ok / enrolSeconds)} executions/s); CPU node ${cpuEnrol.node.toFixed(1)} s postgres ${cpuEnrol.pg.toFixed(1)} s`);
    // Let the worker finish whatever else the enrolment left (e.g. job bookkeeping) before firing.
    await until('worker catching up', () => dueJobs(client), (n) => n === 0, 500);

    const cpu1 = { node: cpuSeconds(server.pid), pg: postgresCpu(server.pid) };
    const fireStarted = Date.now();
    const f = await burst(server.base, project.public, fired.length, (k) => ({ email: `waiter${fired[k]}@example.com`, event: 'purchase', data: { amount: 42 } }), Date.now() + opts.timeout * 1000);
    console.log(`  fire burst: ${f.ok} accepted in ${f.seconds.toFixed(1)} s (${fmt(f.ok / f.seconds)}/s), ${f.failed.length} failed, ${f.retries} retried`);
    const resumed = await until(
      'resumed',
      async () => (await client.query(`SELECT count(*)::int AS n FROM workflow_step_executions WHERE project_id = $1 AND step_id = $2 AND status = 'COMPLETED'`, [project.id, waitStep])).rows[0].n,
      (n) => n >= f.ok,
      200,
      (n) => `${n} of ${f.ok}`,
    );
    const cpuFire = { node: cpuSeconds(server.pid) - cpu1.node, pg: postgresCpu(server.pid) - cpu1.pg };
    await sleep(2000); // anything resumed by mistake would show up in the checks below

    const { rows: lat } = await client.query(
      `SELECT extract(epoch FROM (se.completed_at - ev.created_at)) * 1000 AS ms, se.completed_at, ev.created_at AS event_at
         FROM workflow_step_executions se
         JOIN workflow_executions ex ON ex.project_id = se.project_id AND ex.id = se.execution_id
         JOIN events ev ON ev.project_id = ex.project_id AND ev.contact_id = ex.contact_id AND ev.name = 'purchase'
        WHERE se.project_id = $1 AND se.step_id = $2 AND se.status = 'COMPLETED'`,
      [project.id, waitStep],
    );
    const ms = lat.map((r) => Number(r.ms)).sort((a, b) => a - b);
    const lastResume = Math.max(...lat.map((r) => r.completed_at.getTime()));
    const lastEvent = Math.max(...lat.map((r) => r.event_at.getTime()));
    const { rows: check } = await client.query(
      `SELECT ex.status, se.status AS step_status,
              EXISTS (SELECT 1 FROM events ev WHERE ev.project_id = ex.project_id AND ev.contact_id = ex.contact_id AND ev.name = 'purchase') AS fired,
              count(*)::int AS n
         FROM workflow_executions ex
         LEFT JOIN workflow_step_executions se ON se.project_id = ex.project_id AND se.execution_id = ex.id AND se.step_id = $3
        WHERE ex.project_id = $1 AND ex.workflow_id = $2 GROUP BY 1, 2, 3 ORDER BY 3, 1`,
      [project.id, wf.id, waitStep],
    );
    const firedCompleted = check.filter((r) => r.fired && r.status === 'COMPLETED' && r.step_status === 'COMPLETED').reduce((s, r) => s + r.n, 0);
    const othersWaiting = check.filter((r) => !r.fired && r.status === 'WAITING' && r.step_status === 'WAITING').reduce((s, r) => s + r.n, 0);
    console.log(`
  enrolment       ${b.ok} executions WAITING ${enrolSeconds.toFixed(1)} s after the first trigger track (${fmt(b.ok / enrolSeconds)}/s)
  resume          ${resumed.value} of ${f.ok} wait steps COMPLETED${resumed.ok ? '' : ' (timed out)'}; last accepted track → last resume ${((lastResume - f.lastOkAt) / 1000).toFixed(2)} s (target ≤ 5 s; negative: resumed before the client had the answer); last event created_at → last resume ${((lastResume - lastEvent) / 1000).toFixed(2)} s; first track sent → last resume ${((lastResume - fireStarted) / 1000).toFixed(2)} s
  latency         per event, created_at → wait step completed_at: p50 ${fmt(pct(ms, 50))} ms  p90 ${fmt(pct(ms, 90))} ms  p99 ${fmt(pct(ms, 99))} ms  max ${fmt(ms.at(-1))} ms (${ms.length} events)
  untouched       fired + COMPLETED ${firedCompleted} (expected ${f.ok}); not fired + still WAITING ${othersWaiting} (expected ${b.ok - f.ok}); by (status, step status, fired): ${check.map((r) => `${r.status}/${r.step_status}/${r.fired ? 'fired' : 'not fired'} ${r.n}`).join(', ')}
  CPU seconds     enrolment: node ${cpuEnrol.node.toFixed(1)} s postgres ${cpuEnrol.pg.toFixed(1)} s · fire → all resumed: node ${cpuFire.node.toFixed(1)} s postgres ${cpuFire.pg.toFixed(1)} s
  server peak RSS ${fmt(peakRss(server.pid))} MiB (node process, VmHWM)`);
  } finally {
    await server.stop();
  }
}

const started = performance.now();
if (opts.mode === 'track') await trackMode();
else if (opts.mode === 'steps') await stepsMode();
else await waitMode();
console.log(`(bench took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
// Keep-alive sockets of fetch would hold the process open for a few seconds.
process.exit(0);
