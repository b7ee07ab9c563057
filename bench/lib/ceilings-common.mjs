// Shared by bench/ceilings.mjs and its measurement modules: load average, process CPU, timed
// windows, percentiles, and children that are stopped whatever happens.
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';

export { cpuSeconds, loadAverage, postgresCpuBelow } from './proc.mjs';

export const cpuCount = () => readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? 0;

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
