// Start-up and shutdown time of `npm start`, measured as a new user meets them:
//   cold = fresh DATA_DIR (initdb, first migrations), warm = second start on that data.
// For each: spawn until GET /health answers 200, then SIGTERM until `npm start` exits.
// Usage: node bench/start-time.mjs [--runs 3] [--start-timeout 120000] [--stop-timeout 30000]
//        [--signal-target server|npm] [--keep]. See bench/README.md.
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
import { freePort, health, readyPid } from './lib/proc.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    'start-timeout': { type: 'string', default: '120000' },
    'stop-timeout': { type: 'string', default: '30000' },
    // server: SIGTERM the node process that serves (the pid of its ready line; what a supervisor that
    // targets the app does). npm: SIGTERM the `npm start` process itself.
    'signal-target': { type: 'string', default: 'server' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (args.help) {
  console.log('node bench/start-time.mjs [--runs N] [--start-timeout ms] [--stop-timeout ms] [--signal-target server|npm] [--keep]');
  process.exit(0);
}
const RUNS = Number(args.runs);
const START_TIMEOUT = Number(args['start-timeout']);
const STOP_TIMEOUT = Number(args['stop-timeout']);
const TARGET = args['signal-target'];
if (!Number.isInteger(RUNS) || RUNS < 1 || !(START_TIMEOUT > 0) || !(STOP_TIMEOUT > 0) || !['server', 'npm'].includes(TARGET)) {
  console.error('error: --runs must be a positive integer, timeouts positive numbers, --signal-target server or npm');
  process.exit(2);
}


function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function postmasterPid(dataDir) {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}


/** Ends whatever a failed run left: the whole `npm start` process group, then its PostgreSQL. */
async function killTree(child, dataDir) {
  for (const signal of ['SIGTERM', 'SIGKILL']) {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // group already gone
    }
    for (let i = 0; i < 50 && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
  }
  const pg = postmasterPid(dataDir);
  if (pg && alive(pg)) process.kill(pg, 'SIGINT');
}

/** One `npm start` on `dataDir`: ms until /health is 200, ms from SIGTERM until exit. */
async function measure(kind, dataDir) {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' };
  for (const name of ['DATABASE_URL', 'ROLE', 'SECRET', 'PUBLIC_URL']) delete env[name];
  const result = { kind, startMs: NaN, stopMs: NaN, exit: '', postgresLeft: false, note: '' };
  const t0 = performance.now();
  // detached: its own process group, so a timeout can end npm, sh, tsx and the server together.
  const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() })));

  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited before /health answered: ${stderr.trim().split('\n').pop()}`);
      if ((await health(port)) === 200) break;
      if (performance.now() - t0 > START_TIMEOUT) throw new Error(`/health not 200 within ${START_TIMEOUT} ms`);
      await sleep(25);
    }
    result.startMs = performance.now() - t0;
    let serverPid;
    for (let i = 0; i < 100 && !(serverPid = readyPid(stdout)); i++) await sleep(20);
    if (!serverPid) throw new Error('no `ready` log line with a pid');
    const pgPid = postmasterPid(dataDir);

    const t1 = performance.now();
    process.kill(TARGET === 'npm' ? child.pid : serverPid, 'SIGTERM');
    const exit = await Promise.race([exited, sleep(STOP_TIMEOUT).then(() => undefined)]);
    if (!exit) throw new Error(`npm start still running ${STOP_TIMEOUT} ms after SIGTERM`);
    result.stopMs = exit.at - t1;
    result.exit = exit.signal ?? String(exit.code);
    if (alive(serverPid)) {
      result.note = 'server outlived `npm start`: the signal was not passed on';
      process.kill(serverPid, 'SIGTERM');
      for (let i = 0; i < 300 && alive(serverPid); i++) await sleep(100);
    }
    result.postgresLeft = pgPid !== undefined && alive(pgPid);
  } catch (err) {
    result.note = err instanceof Error ? err.message : String(err);
  } finally {
    if (child.exitCode === null && child.signalCode === null) await killTree(child, dataDir);
  }
  return result;
}

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const ms = (x) => (Number.isFinite(x) ? `${Math.round(x)}` : '-');

console.log(
  `machine: ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ` +
    `${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, node ${process.version}, ${os.platform()} ${os.release()}`,
);
console.log(`runs: ${RUNS} cold + ${RUNS} warm; SIGTERM to: ${TARGET}\n`);

const results = [];
const roots = [];
for (let run = 1; run <= RUNS; run++) {
  const root = mkdtempSync(path.join(os.tmpdir(), 'mailplatform-bench-'));
  chmodSync(root, 0o755); // the postgres user (when run as root) must reach its data folder
  roots.push(root);
  const dataDir = path.join(root, 'data');
  for (const kind of ['cold', 'warm']) {
    const r = { run, ...(await measure(kind, dataDir)) };
    results.push(r);
    console.log(`run ${run} ${kind}: start ${ms(r.startMs)} ms, shutdown ${ms(r.stopMs)} ms, exit ${r.exit || '-'}${r.note ? ` (${r.note})` : ''}`);
  }
}
if (!args.keep) for (const root of roots) rmSync(root, { recursive: true, force: true });

const header = ['run', 'kind', 'spawn → /health 200 (ms)', 'SIGTERM → exit (ms)', 'exit', 'postgres left', 'note'];
const rows = results.map((r) => [String(r.run), r.kind, ms(r.startMs), ms(r.stopMs), r.exit || '-', r.postgresLeft ? 'YES' : 'no', r.note]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(`\n${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const row of rows) console.log(line(row));

const of = (kind, key) => results.filter((r) => r.kind === kind).map((r) => r[key]);
console.log(
  `\nmedian cold start ${ms(median(of('cold', 'startMs')))} ms, median warm start ${ms(median(of('warm', 'startMs')))} ms, ` +
    `median shutdown ${ms(median(results.map((r) => r.stopMs)))} ms`,
);
const failed = results.some((r) => !Number.isFinite(r.startMs) || !Number.isFinite(r.stopMs) || r.exit !== '0' || r.postgresLeft || r.note);
process.exit(failed ? 1 : 0);
