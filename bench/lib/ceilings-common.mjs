// Shared by bench/ceilings.mjs and its measurement modules: load average, process CPU, timed
// windows, percentiles, and children that are stopped whatever happens.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';

const CLK_TCK = 100;

/** The three load averages of /proc/loadavg, e.g. "1.52 1.10 0.93". */
export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export const cpuCount = () => readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? 0;

/** User + system CPU seconds of `pid` (with its reaped children when `withChildren`); 0 once gone. */
export function cpuSeconds(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** CPU seconds of every `postgres` process below `rootPid` (postmaster with its reaped children, live backends). */
export function postgresCpuBelow(rootPid) {
  const all = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      all.push({ pid: Number(name), ppid, comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    } catch {
      // exited meanwhile
    }
  }
  const below = (pid) => all.filter((p) => p.ppid === pid);
  let total = 0;
  const queue = [rootPid];
  while (queue.length > 0) {
    for (const p of below(queue.shift())) {
      queue.push(p.pid);
      if (p.comm === 'postgres') total += cpuSeconds(p.pid, below(p.pid).length > 0);
    }
  }
  return total;
}

/** This process's CPU seconds so far. */
export function ownCpu() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * A measuring window: `warmupMs` not counted, then `seconds` counted. Workers call `done(startedAt)`
 * after each operation (`startedAt` from `performance.now()`); only those finishing inside the
 * window count, with their latency.
 */
export function createWindow(seconds, warmupMs = 1000) {
  const from = performance.now() + warmupMs;
  const to = from + seconds * 1000;
  const latencies = [];
  let count = 0;
  return {
    from,
    to,
    /** False once the window is over: workers stop starting operations. */
    open: () => performance.now() < to,
    done(startedAt, units = 1) {
      const now = performance.now();
      if (now >= from && now < to) {
        count += units;
        latencies.push(now - startedAt);
      }
    },
    /** Waits until the window starts, to read CPU counters at its edges. */
    untilStart: () => sleep(Math.max(0, from - performance.now())),
    untilEnd: () => sleep(Math.max(0, to - performance.now())),
    result() {
      latencies.sort((a, b) => a - b);
      return { count, perSecond: count / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    },
  };
}

/**
 * Forks `modulePath` (with `execArgv`) and waits for its first IPC message, `{ ready: … }`.
 * The child is killed when this process exits, however it exits.
 */
export async function forkChild(modulePath, { execArgv = [], args = [], timeoutMs = 60_000 } = {}) {
  const child = fork(modulePath, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${modulePath}: not ready within ${timeoutMs} ms`)), timeoutMs);
    child.once('message', (m) => {
      clearTimeout(timer);
      resolve(m.ready);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${modulePath} exited (${signal ?? code}) before it was ready`));
    });
  });
  return {
    pid: child.pid,
    ready,
    /** Sends `message` and resolves with the child's next message. */
    ask(message) {
      return new Promise((resolve) => {
        child.once('message', resolve);
        child.send(message);
      });
    },
    async stop() {
      process.removeListener('exit', kill);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(kill, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
