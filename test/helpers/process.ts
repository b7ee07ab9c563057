import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root: the server is spawned from here, as `npm start` does. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A spawned server (scripts/start.mjs) with its output captured. */
export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly dataDir: string;
  /** Resolves once, when the process has exited. */
  readonly exited: Promise<Exit>;
  stdout(): string;
  stderr(): string;
  /** stderr lines starting with `error:`. */
  errorLines(): string[];
  /** `msg` of every JSON log line on stdout so far. */
  logMessages(): string[];
  /** Waits until a log line's `msg` matches. */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
  /** Polls GET /health until it answers 200; fails early if the process exits. */
  waitForHealth(timeoutMs?: number): Promise<unknown>;
  /** Waits for the exit; rejects after the timeout. */
  waitForExit(timeoutMs?: number): Promise<Exit>;
}

const spawned = new Set<ServerProcess>();
const tempRoots = new Set<string>();

/** A free loopback TCP port (closed again before returning). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * A fresh temp folder (mkdtemp makes it 0700: the embedded database must start from such a
 * folder as root without any mode changed, docs/operations.md). Removed by {@link cleanupServers}.
 */
export function makeTempRoot(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'mailplatform-server-'));
  tempRoots.add(root);
  return root;
}

/** The pid in DATA_DIR/postgres/postmaster.pid, when the file exists. */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when a PostgreSQL is (still) running on DATA_DIR/postgres. */
export function embeddedPostgresRunning(dataDir: string): boolean {
  const pid = postmasterPid(dataDir);
  return pid !== undefined && isAlive(pid);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Rejects with `what` after `ms` unless `promise` settles first. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Only what a shell would pass on, so the parent's DATABASE_URL, PORT etc. never leak in. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function parseMessages(stdout: string): string[] {
  const messages: string[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const parsed: unknown = JSON.parse(line);
      if (parsed && typeof parsed === 'object' && 'msg' in parsed && typeof parsed.msg === 'string') messages.push(parsed.msg);
    } catch {
      // a partial line: complete on the next read
    }
  }
  return messages;
}

/**
 * Spawns `node scripts/start.mjs` (what `npm start` runs: dist/, rebuilt first when src/ changed)
 * from the project root, or from `opts.root` (another checkout), with only `env` (plus PATH/HOME)
 * set. HOST=127.0.0.1, LOG_LEVEL=info and DATA_DIR (a fresh temp folder) are filled in when `env`
 * lacks them; `undefined` in `env` removes a variable.
 */
export function startServer(env: Record<string, string | undefined>, opts: { root?: string } = {}): ServerProcess {
  const port = Number(env.PORT);
  const dataDir = env.DATA_DIR ?? path.join(makeTempRoot(), 'data');
  const full: Record<string, string | undefined> = { ...baseEnv(), HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: dataDir, ...env };
  const child = spawn(process.execPath, ['scripts/start.mjs'], {
    cwd: opts.root ?? PROJECT_ROOT,
    env: Object.fromEntries(Object.entries(full).filter((e): e is [string, string] => e[1] !== undefined)),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  const describe = () => `\n--- stdout ---\n${out.slice(-4000)}\n--- stderr ---\n${err.slice(-4000)}`;

  const proc: ServerProcess = {
    child,
    port,
    dataDir,
    exited,
    stdout: () => out,
    stderr: () => err,
    errorLines: () => err.split('\n').filter((l) => l.startsWith('error:')),
    logMessages: () => parseMessages(out),
    async waitForLog(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!parseMessages(out).some((m) => pattern.test(m))) {
        if (hasExited) throw new Error(`exited before logging ${pattern}${describe()}`);
        if (Date.now() > deadline) throw new Error(`no log line ${pattern} within ${timeoutMs} ms${describe()}`);
        await sleep(50);
      }
    },
    async waitForHealth(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        if (hasExited) throw new Error(`exited before /health answered${describe()}`);
        try {
          const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) });
          if (res.status === 200) return await res.json();
        } catch {
          // not listening yet
        }
        if (Date.now() > deadline) throw new Error(`/health not 200 within ${timeoutMs} ms${describe()}`);
        await sleep(100);
      }
    },
    async waitForExit(timeoutMs = 15_000) {
      try {
        return await withTimeout(exited, timeoutMs, 'server exit');
      } catch (e) {
        throw new Error(`${e instanceof Error ? e.message : String(e)}${describe()}`);
      }
    },
  };
  spawned.add(proc);
  return proc;
}

/**
 * Ends every server this file spawned that still runs (SIGTERM, SIGKILL after 10 s),
 * stops any embedded PostgreSQL left behind, and removes the temp folders. For
 * afterEach/afterAll, so a failed test leaves nothing running.
 */
export async function cleanupServers(opts: { removeTemp?: boolean } = {}): Promise<void> {
  for (const proc of spawned) {
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGTERM');
      const done = await Promise.race([proc.exited, sleep(10_000).then(() => undefined)]);
      if (!done) {
        proc.child.kill('SIGKILL');
        await withTimeout(proc.exited, 5000, 'SIGKILL').catch(() => undefined);
      }
    }
    const pid = postmasterPid(proc.dataDir);
    if (pid !== undefined && isAlive(pid)) {
      process.kill(pid, 'SIGINT');
      for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(100);
    }
    spawned.delete(proc);
  }
  if (opts.removeTemp) {
    for (const root of tempRoots) {
      if (existsSync(root)) rmSync(root, { recursive: true, force: true });
      tempRoots.delete(root);
    }
  }
}
