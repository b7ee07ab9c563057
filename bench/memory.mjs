// Memory of the server measured from outside (/proc), not a test: numbers depend on the machine.
//
//   node bench/memory.mjs                          # idle: `npm start` on a temp DATA_DIR, 3 cold + 3 warm starts
//   node bench/memory.mjs --runs 5 --settle 5000   # RSS read 5 s after /health first answers 200
//   node bench/memory.mjs -- node bench/track.mjs --duration 20          # peak while a command runs
//   node bench/memory.mjs -- node --import tsx bench/send.mjs --emails 5000
//   node bench/memory.mjs --pid 1234 [--duration 60]                     # peak of a running server
//
// Idle: spawns `npm start` (PORT, DATA_DIR of its own), waits for GET /health 200, waits --settle
// ms, then reads VmRSS of every process of the tree: npm, any wrapper, the Node process that
// serves (the pid its `ready` log line names) and the embedded PostgreSQL. PostgreSQL is given
// twice: the sum of its processes' RSS (counts shared_buffers pages once per process that
// touched them) and the sum of their Pss from /proc/<pid>/smaps_rollup (shared pages divided
// among the processes sharing them: the fairer total).
//
// Peak (`-- command…` or --pid): samples every --interval ms the Node server processes below the
// command (or the given pid) and their PostgreSQL, and prints each process's peak RSS and the peak
// of PostgreSQL's RSS and Pss sums. A Node process counts as a server when its command line runs
// src/server.ts, dist/server.js or scripts/start.mjs (a wrapper that only spawns it is listed too).
import { spawn } from 'node:child_process';
import console from 'node:console';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { descendants, freePort, health, processes, readyPid } from './lib/proc.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dashdash = process.argv.indexOf('--');
const command = dashdash > 0 ? process.argv.slice(dashdash + 1) : [];
const { values: args } = parseArgs({
  args: dashdash > 0 ? process.argv.slice(2, dashdash) : process.argv.slice(2),
  options: {
    runs: { type: 'string', default: '3' },
    settle: { type: 'string', default: '3000' },
    pid: { type: 'string' },
    duration: { type: 'string', default: '3600' },
    interval: { type: 'string', default: '100' },
    'start-timeout': { type: 'string', default: '120000' },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  console.log('node bench/memory.mjs [--runs N] [--settle ms] | [--interval ms] -- command… | --pid N [--duration s]');
  process.exit(0);
}
const RUNS = Number(args.runs);
const SETTLE = Number(args.settle);
const INTERVAL = Number(args.interval);
const DURATION_MS = Number(args.duration) * 1000;
if (!Number.isInteger(RUNS) || RUNS < 1 || !(SETTLE >= 0) || !(INTERVAL > 0) || !(DURATION_MS > 0)) {
  console.error('error: --runs must be a positive integer, --settle, --interval and --duration positive numbers');
  process.exit(2);
}

const MB = 1024; // /proc figures are in kB

/** `Name:   123 kB` fields of a /proc file, in kB; undefined when the process is gone. */
function procKb(file, field) {
  try {
    const m = readFileSync(file, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}
const rssKb = (pid) => procKb(`/proc/${pid}/status`, 'VmRSS');
const pssKb = (pid) => procKb(`/proc/${pid}/smaps_rollup`, 'Pss');

const isPostgres = (p) => p.comm === 'postgres' || p.cmdline.startsWith('postgres:') || /\/bin\/postgres\s/.test(p.cmdline);
const isServer = (p) => !isPostgres(p) && /(src\/server\.ts|dist\/server\.js|scripts\/start\.mjs)/.test(p.cmdline);
/** ROLE from the process's environment (all when unset), to tell the API from a worker. */
function roleOf(pid) {
  try {
    const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return env.find((e) => e.startsWith('ROLE='))?.slice(5) || 'all';
  } catch {
    return '?';
  }
}

/** RSS and Pss sums (kB) over the postgres processes below `pid` (a postmaster and its children). */
function postgresBelow(pid, all) {
  const pg = descendants(pid, all).filter(isPostgres);
  let rss = 0;
  let pss = 0;
  for (const p of pg) {
    rss += rssKb(p.pid) ?? 0;
    pss += pssKb(p.pid) ?? 0;
  }
  return { rss, pss, count: pg.length };
}

const mb = (kb) => (Number.isFinite(kb) ? (kb / MB).toFixed(0) : '-');
const median = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  console.log(`${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

console.log(
  `machine: ${os.availableParallelism()} CPUs, ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, node ${process.version}; ` +
    `load average at start ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);

// ---------------------------------------------------------------- peak while something runs
/**
 * Samples until `done()` is true: per server process the peak RSS, and the peak of the
 * PostgreSQL RSS and Pss sums under each server. `roots` lists the pids to look below.
 */
async function samplePeaks(roots, done) {
  const peaks = new Map(); // pid → { rss, role, cmdline, pgRss, pgPss }
  const started = performance.now();
  while (!done() && performance.now() - started < DURATION_MS) {
    const all = processes();
    const servers = roots.flatMap((r) => [...all.filter((p) => p.pid === r && isServer(p)), ...descendants(r, all).filter(isServer)]);
    for (const s of servers) {
      const rss = rssKb(s.pid);
      if (rss === undefined) continue;
      let peak = peaks.get(s.pid);
      if (!peak) {
        peak = { rss: 0, role: roleOf(s.pid), cmdline: s.cmdline, pgRss: 0, pgPss: 0, samples: 0 };
        peaks.set(s.pid, peak);
      }
      peak.rss = Math.max(peak.rss, rss);
      peak.samples++;
      const pg = postgresBelow(s.pid, all);
      peak.pgRss = Math.max(peak.pgRss, pg.rss);
      peak.pgPss = Math.max(peak.pgPss, pg.pss);
    }
    await sleep(INTERVAL);
  }
  return peaks;
}

function printPeaks(peaks, seconds) {
  console.log(`\npeaks over ${seconds.toFixed(0)} s, sampled every ${INTERVAL} ms; load average now ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  const rows = [...peaks.entries()].map(([pid, p]) => {
    // A wrapper (tsx's CLI, npm) spawns the real server: mark it so it is not read as the server.
    const wrapper = /node_modules\/\.bin\/tsx /.test(p.cmdline) ? ' (wrapper)' : '';
    return [pid, p.role + wrapper, mb(p.rss), p.pgRss ? mb(p.pgRss) : '-', p.pgPss ? mb(p.pgPss) : '-', p.samples, p.cmdline.slice(0, 90)];
  });
  table(['pid', 'role', 'peak RSS (MB)', 'its PostgreSQL peak RSS sum (MB)', 'PostgreSQL peak Pss sum (MB)', 'samples', 'command'], rows);
}

if (command.length > 0) {
  const t0 = performance.now();
  const child = spawn(command[0], command.slice(1), { cwd: ROOT, stdio: 'inherit' });
  let exited = false;
  child.once('exit', () => (exited = true));
  const peaks = await samplePeaks([child.pid], () => exited);
  if (!exited) child.kill('SIGTERM');
  printPeaks(peaks, (performance.now() - t0) / 1000);
  process.exit(child.exitCode ?? 1);
}

if (args.pid) {
  const pid = Number(args.pid);
  const t0 = performance.now();
  const alive = () => rssKb(pid) !== undefined;
  if (!alive()) {
    console.error(`error: no process ${pid}`);
    process.exit(2);
  }
  const peaks = await samplePeaks([pid], () => !alive());
  printPeaks(peaks, (performance.now() - t0) / 1000);
  process.exit(0);
}

// ---------------------------------------------------------------- idle after start

/** Ends what a run started: SIGTERM to the server (it stops its PostgreSQL), else the whole group and the postmaster. */
async function stopTree(child, serverPid, dataDir) {
  const exited = new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', r)));
  if (serverPid) {
    try {
      process.kill(serverPid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  await Promise.race([exited, sleep(30_000)]);
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
    try {
      const postmaster = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (postmaster > 0) process.kill(postmaster, 'SIGINT');
    } catch {
      // no PostgreSQL left
    }
  }
}

async function idleRun(kind, dataDir) {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  for (const name of ['DATABASE_URL', 'ROLE', 'SECRET', 'PUBLIC_URL', 'REDIS_URL']) delete env[name];
  const t0 = performance.now();
  const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  let serverPid;
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited: ${stderr.trim().split('\n').pop()}`);
      if ((await health(port)) === 200) break;
      if (performance.now() - t0 > Number(args['start-timeout'])) throw new Error('/health not 200 in time');
      await sleep(25);
    }
    const startMs = performance.now() - t0;
    for (let i = 0; i < 100 && !(serverPid = readyPid(stdout)); i++) await sleep(20);
    if (!serverPid) throw new Error('no `ready` log line with a pid');
    const atHealth = rssKb(serverPid);
    await sleep(SETTLE);
    const all = processes();
    const tree = [{ pid: child.pid, comm: 'npm', cmdline: 'npm start' }, ...descendants(child.pid, all)];
    const others = tree.filter((p) => p.pid !== serverPid && !isPostgres(p)).reduce((s, p) => s + (rssKb(p.pid) ?? 0), 0);
    const pg = postgresBelow(serverPid, all);
    return { kind, startMs, atHealth, server: rssKb(serverPid), others, pgRss: pg.rss, pgPss: pg.pss, pgCount: pg.count };
  } finally {
    await stopTree(child, serverPid, dataDir);
  }
}

console.log(`idle: ${RUNS} cold + ${RUNS} warm starts of \`npm start\`; RSS read ${SETTLE} ms after /health first answers 200\n`);
const results = [];
for (let run = 1; run <= RUNS; run++) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'bench-memory-'));
  chmodSync(root, 0o755); // the embedded PostgreSQL runs as `postgres` and must reach its folder
  try {
    for (const kind of ['cold', 'warm']) {
      const r = await idleRun(kind, path.join(root, 'data'));
      results.push({ run, ...r });
      console.log(`run ${run} ${kind}: start ${Math.round(r.startMs)} ms, server ${mb(r.server)} MB (${mb(r.atHealth)} at /health), npm + wrappers ${mb(r.others)} MB, PostgreSQL RSS ${mb(r.pgRss)} MB / Pss ${mb(r.pgPss)} MB (${r.pgCount} processes)`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
console.log('');
table(
  ['run', 'kind', 'start (ms)', 'server RSS at /health (MB)', `server RSS +${SETTLE} ms (MB)`, 'npm + wrappers RSS (MB)', 'PostgreSQL RSS sum (MB)', 'PostgreSQL Pss sum (MB)'],
  results.map((r) => [r.run, r.kind, Math.round(r.startMs), mb(r.atHealth), mb(r.server), mb(r.others), mb(r.pgRss), mb(r.pgPss)]),
);
const of = (kind, key) => median(results.filter((r) => r.kind === kind).map((r) => r[key]));
for (const kind of ['cold', 'warm']) {
  console.log(
    `median ${kind}: server ${mb(of(kind, 'server'))} MB, npm + wrappers ${mb(of(kind, 'others'))} MB, ` +
      `PostgreSQL RSS ${mb(of(kind, 'pgRss'))} MB / Pss ${mb(of(kind, 'pgPss'))} MB, start ${Math.round(of(kind, 'startMs'))} ms`,
  );
}
console.log(`load average at end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
