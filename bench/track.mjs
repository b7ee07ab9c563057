// Load test of POST /v1/track (group commit) with autocannon. Not a test: numbers depend on
// the machine and on what else runs on it.
//
//   node bench/track.mjs                       # starts `npm start` on a temp DATA_DIR, 50 connections, 30 s
//   node bench/track.mjs --duration 10 --connections 100 --emails 1000
//   node bench/track.mjs --base http://127.0.0.1:8080 --key pk_… [--secret sk_…]   # a running server
//   node bench/track.mjs --profile /tmp/prof   # the started server writes a CPU profile (node --cpu-prof) there at exit
//   node bench/track.mjs --rate 1500            # offer 1,500 req/s at most (CPU per request at a fixed load: for A/B on a busy machine)
//
// Prints req/s, latency percentiles, non-2xx and errors, the CPU seconds spent during the
// measured run by the server's Node process and by its PostgreSQL processes (utime + stime from
// /proc, children that exited included), and the batches committed meanwhile with their mean
// size (the server's /metrics, when it answers this client). With a started server it also
// checks that the number of events in the database equals the number of 2xx answers (an accepted
// event is never lost).
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import { setTimeout as delay } from 'node:timers/promises';
import autocannon from 'autocannon';
import { cpuSeconds, descendants, freePort, processes } from './lib/proc.mjs';

const fetch = globalThis.fetch;

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

const opts = {
  base: arg('base', undefined),
  key: arg('key', undefined),
  secret: arg('secret', undefined),
  connections: Number(arg('connections', '50')),
  duration: Number(arg('duration', '30')),
  warmup: Number(arg('warmup', '5')),
  emails: Number(arg('emails', '10000')),
  logLevel: arg('log-level', 'info'),
  profile: arg('profile', undefined),
  rate: arg('rate', undefined),
};
const root = process.cwd();
const sleep = (ms) => delay(ms);

/** The Node process that serves under `npm start`: scripts/start.mjs (compiled), or tsx's child running src/server.ts. */
const isServerNode = (p) => p.comm === 'node' && (p.cmdline.includes('scripts/start.mjs') || (p.cmdline.includes('loader.mjs') && p.cmdline.includes('src/server.ts')));

/** The server's Node pid and its postmaster pid (started server), or every postgres process (running one). */
function cpuSnapshot(server) {
  if (server) {
    const tree = processTree(server.npmPid);
    const node = tree.find(isServerNode);
    const postmaster = tree.find((p) => p.comm === 'postgres' && p.cmdline.includes(' -D '));
    const backends = postmaster ? descendants(postmaster.pid) : [];
    return {
      node: node ? cpuSeconds(node.pid) : 0,
      postgres: (postmaster ? cpuSeconds(postmaster.pid, true) : 0) + backends.reduce((s, p) => s + cpuSeconds(p.pid), 0),
    };
  }
  const all = processes();
  return {
    node: 0,
    postgres: all.filter((p) => p.comm === 'postgres').reduce((s, p) => s + cpuSeconds(p.pid), 0),
  };
}

/**
 * `npm start`, or with --profile the command of its script run by node itself with --cpu-prof
 * (not accepted in NODE_OPTIONS), the same flags otherwise.
 */
function startCommand() {
  if (!opts.profile) return ['npm', ['start']];
  const script = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const args = script.replace(/^exec\s+node\s+/, '').split(/\s+/);
  return [process.execPath, ['--cpu-prof', `--cpu-prof-dir=${path.resolve(opts.profile)}`, ...args]];
}

/** The process started (npm, or node itself with --profile) and everything below it. */
const processTree = (pid) => [...processes().filter((p) => p.pid === pid), ...descendants(pid)];

async function startServer() {
  const tmp = mkdtempSync(path.join(tmpdir(), 'bench-track-'));
  chmodSync(tmp, 0o755); // the embedded PostgreSQL runs as `postgres` and must reach its folder
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: opts.logLevel, RATE_LIMIT_PER_MINUTE: '10000000' };
  for (const name of ['DATABASE_URL', 'ROLE', 'SECRET', 'PUBLIC_URL', 'REDIS_URL']) delete env[name];
  const child = spawn(...startCommand(), { cwd: root, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('server did not become healthy within 120 s');
    await sleep(100);
  }
  return {
    base,
    npmPid: child.pid,
    async stop() {
      // SIGTERM to the server's Node process only: it drains, then stops its PostgreSQL.
      const node = processTree(child.pid).find(isServerNode);
      if (node) process.kill(node.pid, 'SIGTERM');
      const exited = new Promise((r) => child.once('exit', r));
      await Promise.race([exited, sleep(30_000)]);
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

async function createProject(base) {
  const email = `bench-${Date.now()}@example.com`;
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'bench password 123' }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
  const cookie = signup.headers.get('set-cookie').split(';')[0];
  const res = await fetch(`${base}/users/@me/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ name: 'bench' }),
  });
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${await res.text()}`);
  return res.json();
}

const EVENTS = ['page-view', 'signed-up', 'purchase', 'trial-started', 'feature-used'];
const PLANS = ['free', 'pro', 'team'];

function runAutocannon(base, key, seconds) {
  let n = 0;
  return autocannon({
    url: base,
    connections: opts.connections,
    duration: seconds,
    ...(opts.rate && { overallRate: Number(opts.rate) }),
    requests: [
      {
        method: 'POST',
        path: '/v1/track',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        setupRequest: (req) => {
          const i = n++;
          const body = {
            email: `user${i % opts.emails}@example.com`,
            event: EVENTS[i % EVENTS.length],
            data: { plan: PLANS[i % PLANS.length], visits: i, source: i % 7 === 0 ? null : 'bench', order: { value: `o-${i}`, persistent: false } },
          };
          return { ...req, body: JSON.stringify(body) };
        },
      },
    ],
  });
}

/** Committed track batches so far and the calls in them (the server's /metrics, read from loopback). */
async function trackBatches(base) {
  const res = await fetch(`${base}/metrics`).catch(() => undefined);
  if (res?.status !== 200) return undefined;
  const text = await res.text();
  const read = (suffix) => Number(text.match(new RegExp(`^mailplatform_group_commit_batch_size_${suffix}\\{batcher="track"\\} (\\S+)$`, 'm'))?.[1] ?? 0);
  return { batches: read('count'), calls: read('sum') };
}

async function countEvents(base, secret) {
  const res = await fetch(`${base}/events?limit=1`, { headers: { authorization: `Bearer ${secret}` } });
  return (await res.json()).total;
}

/** The event count once requests still in flight when the client stopped have landed. */
async function settledCount(base, secret) {
  let last = await countEvents(base, secret);
  for (let i = 0; i < 50; i++) {
    await sleep(100);
    const now = await countEvents(base, secret);
    if (now === last) return now;
    last = now;
  }
  return last;
}

const server = opts.base ? undefined : await startServer();
const base = opts.base ?? server.base;
try {
  const project = opts.key ? { public: opts.key, secret: opts.secret } : await createProject(base);
  if (opts.warmup > 0) {
    console.log(`warm-up ${opts.warmup} s…`);
    await runAutocannon(base, project.public, opts.warmup);
  }
  const eventsBefore = project.secret ? await settledCount(base, project.secret) : undefined;
  const batchesBefore = await trackBatches(base);
  const cpuBefore = cpuSnapshot(server);
  const benchCpuBefore = process.cpuUsage();
  console.log(`POST /v1/track: ${opts.connections} connections, ${opts.duration} s, ${opts.emails} distinct emails${opts.rate ? `, at most ${opts.rate} req/s` : ''}…`);
  const r = await runAutocannon(base, project.public, opts.duration);
  const cpuAfter = cpuSnapshot(server);
  const benchCpu = process.cpuUsage(benchCpuBefore);
  const ok = r['2xx'];
  const batchesAfter = batchesBefore && (await trackBatches(base));
  const total = ok + r.non2xx;
  const cpu = { node: cpuAfter.node - cpuBefore.node, postgres: cpuAfter.postgres - cpuBefore.postgres };
  const pct = (s) => `${((s / r.duration) * 100).toFixed(0)}% of a core`;
  console.log(`
requests        ${total} in ${r.duration.toFixed(1)} s: ${(total / r.duration).toFixed(0)} req/s (2xx ${ok}, ${(ok / r.duration).toFixed(0)}/s)
latency (ms)    p50 ${r.latency.p50}  p90 ${r.latency.p90}  p99 ${r.latency.p99}  max ${r.latency.max}  mean ${r.latency.average.toFixed(1)}
failures        non-2xx ${r.non2xx} ${JSON.stringify(Object.fromEntries(Object.entries(r.statusCodeStats).filter(([s]) => !s.startsWith('2')).map(([s, v]) => [s, v.count])))}  errors ${r.errors}  timeouts ${r.timeouts}
CPU seconds     server node ${cpu.node.toFixed(1)} s (${pct(cpu.node)})  postgres ${cpu.postgres.toFixed(1)} s (${pct(cpu.postgres)})  load generator ${((benchCpu.user + benchCpu.system) / 1e6).toFixed(1)} s${server ? '' : '  (running server: postgres = every postgres process on the machine)'}
CPU per request server node ${((cpu.node / total) * 1000).toFixed(3)} ms  postgres ${((cpu.postgres / total) * 1000).toFixed(3)} ms`);
  const batches = batchesAfter ? batchesAfter.batches - batchesBefore.batches : 0;
  if (batches > 0) {
    console.log(`batches         ${batches} committed, ${((batchesAfter.calls - batchesBefore.calls) / batches).toFixed(1)} calls each`);
  }
  if (eventsBefore !== undefined) {
    const recorded = (await settledCount(base, project.secret)) - eventsBefore;
    // Exactly one event per 2xx answer. The client stops at the deadline with up to one request
    // per connection in flight (sent, never counted), and a request it gave up on (error/timeout)
    // may still have been recorded: only those may account for a surplus.
    const unanswered = opts.connections + r.errors + r.timeouts;
    const verdict = recorded < ok ? '  MISSING EVENTS' : recorded > ok + unanswered ? '  EXTRA EVENTS' : recorded === ok ? '  (equal)' : `  (${recorded - ok} from requests in flight when the load stopped)`;
    console.log(`events recorded ${recorded} (2xx answers ${ok})${verdict}`);
  }
} finally {
  await server?.stop();
}
