import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { embeddedUrlFile, openDatabase } from '../open.js';
import { packagedPostgresMajor } from '../postgres-process.js';
import { type BackupHeader, CLUSTER } from './manifest.js';
import { moveAside, ownCluster, presentEntries, putInPlace, runningPostmaster, unpackBackup } from './restore.js';

/** A restore refused before anything was written (running server, DATA_DIR in use). */
export class RestoreRefused extends Error {}

export interface RestoreResult {
  readonly header: BackupHeader;
  /** Where the previous contents of DATA_DIR were moved (with --force). */
  readonly aside: string | undefined;
  /** Newest migration found in the restored database. */
  readonly latestMigration: string | null;
}

export interface RestoreOptions {
  readonly file: string;
  readonly dataDir: string;
  /** Move an existing database of DATA_DIR aside instead of refusing. */
  readonly force: boolean;
  readonly progress: (line: string) => void;
}

const stamp = () => new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, 'Z');

/**
 * Restores a backup into DATA_DIR: refuses while a PostgreSQL runs there, and an existing
 * database unless `force` (then moved into DATA_DIR/before-restore-<time>); unpacks and checks
 * every file, gives the cluster to the user PostgreSQL runs as, then starts it once (recovery
 * replays the WAL of the backup), checks its migrations and stops it.
 */
export async function restoreDataDir(opts: RestoreOptions): Promise<RestoreResult> {
  const cluster = path.join(opts.dataDir, CLUSTER);
  const pid = runningPostmaster(cluster);
  if (pid !== undefined) throw new RestoreRefused(`a PostgreSQL is running on ${cluster} (pid ${pid}): stop the server before restoring`);
  if (!existsSync(opts.file)) throw new RestoreRefused(`no backup file ${opts.file}`);
  const present = presentEntries(opts.dataDir);
  const when = stamp();
  const aside = path.join(opts.dataDir, `before-restore-${when}`);
  if (present.length > 0 && !opts.force) {
    throw new RestoreRefused(`${opts.dataDir} already holds a database (${present.join(', ')}): pass --force to move it aside into ${aside}`);
  }

  await mkdir(opts.dataDir, { recursive: true });
  const staging = path.join(opts.dataDir, `.restore-${when}`);
  opts.progress(`restore: unpacking ${opts.file} and checking every file`);
  let header: BackupHeader;
  try {
    header = await unpackBackup({ file: opts.file, into: staging, postgresMajor: packagedPostgresMajor() });
    await ownCluster(path.join(staging, CLUSTER));
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
  if (present.length > 0) {
    await moveAside(opts.dataDir, present, aside);
    opts.progress(`restore: moved the previous ${present.join(', ')} into ${aside}`);
  }
  await rm(embeddedUrlFile(opts.dataDir), { force: true }); // stale: no server runs here
  await putInPlace(staging, opts.dataDir);

  try {
    return await checkRestored(opts, header, present.length > 0 ? aside : undefined);
  } catch (err) {
    const where = `the restored files are in ${opts.dataDir}${present.length > 0 ? `, the previous ones in ${aside}` : ''}`;
    throw new Error(`${err instanceof Error ? err.message : String(err)} (${where})`);
  }
}

/** Starts the restored cluster once (recovery), checks it and stops it. */
async function checkRestored(opts: RestoreOptions, header: BackupHeader, aside: string | undefined): Promise<RestoreResult> {
  const cluster = path.join(opts.dataDir, CLUSTER);
  opts.progress('restore: starting PostgreSQL on the restored files (recovery replays the backup\'s WAL)');
  const log: string[] = [];
  let db;
  try {
    db = await openDatabase({ dataDir: opts.dataDir, databaseUrl: undefined }, { create: false, poolSize: 1, onPostgresLog: (l) => log.push(l) });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`the restored database in ${cluster} did not start: ${reason}`);
  }
  try {
    // Recovery must have started at the backup's start (its backup_label) and reached its end; a
    // start from pg_control's checkpoint instead could miss changes made while files were copied.
    const replayed = log.map((l) => /completed backup recovery with redo LSN (\S+) and end LSN (\S+)/.exec(l)).find((m) => m);
    if (!replayed || replayed[1] !== header.startLsn) {
      throw new Error(`PostgreSQL did not recover the restored files as a backup starting at ${header.startLsn} (no "completed backup recovery" in its log): the archive is not a consistent backup`);
    }
    opts.progress(`restore: PostgreSQL replayed the backup's WAL from ${header.startLsn} to ${replayed[2] ?? '?'}: consistent`);
    const { rows } = await sql<{ name: string | null }>`SELECT max(name) AS name FROM kysely_migration`.execute(db.db);
    const latest = rows[0]?.name ?? null;
    if (latest !== header.latestMigration) {
      throw new Error(`the restored database's newest migration is ${latest ?? 'none'}, the backup recorded ${header.latestMigration ?? 'none'}`);
    }
    return { header, aside, latestMigration: latest };
  } finally {
    await db.close();
  }
}
