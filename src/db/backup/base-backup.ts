import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, type Stats } from 'node:fs';
import { lstat, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type pg from 'pg';
import {
  type BackupHeader,
  CHECKSUMS_NAME,
  CLUSTER,
  FORMAT,
  FORMAT_VERSION,
  formatChecksums,
  HEADER_NAME,
  PASSWORD_FILE,
  SECRET_FILE,
  UPLOADS,
} from './manifest.js';
import { TarWriter } from './tar.js';

// An online backup of the embedded cluster with PostgreSQL's low-level base backup API
// (pg_backup_start / pg_backup_stop on one session): the data folder is copied while the server
// runs, then the WAL written meanwhile is added, with the backup_label that tells PostgreSQL to
// replay it. The result starts like a pg_basebackup -X fetch copy: crash recovery replays the WAL
// to the end of the backup, so it holds every transaction committed before pg_backup_stop.

/** Folders whose contents PostgreSQL rebuilds at start, or that a backup must not carry (PostgreSQL docs, "Making a Base Backup Using the Low Level API"). */
const SKIP_CONTENTS = new Set(['pg_wal', 'pg_replslot', 'pg_stat_tmp', 'pg_dynshmem', 'pg_notify', 'pg_serial', 'pg_snapshots', 'pg_subtrans']);
const SKIP_FILES = new Set([
  'postmaster.pid',
  'postmaster.opts',
  'backup_label',
  'backup_label.old',
  'tablespace_map',
  'backup_manifest',
  'postgresql.auto.conf.tmp',
  'current_logfiles.tmp',
]);
const skipName = (name: string) => SKIP_FILES.has(name) || name.startsWith('pg_internal.init') || name.startsWith('pgsql_tmp') || /^t\d+_\d+/.test(name);

interface Item {
  /** Name in the archive. */
  readonly name: string;
  readonly file: string;
  readonly st: Stats;
}

const isMissing = (err: unknown) => typeof err === 'object' && err !== null && 'code' in err && err.code === 'ENOENT';

/** Folders and files under `root` (parents first), named `prefix/…`; `skip` filters by path relative to root. */
async function walk(root: string, prefix: string, skip: (rel: string, name: string, isDir: boolean) => 'skip' | 'empty' | 'keep'): Promise<Item[]> {
  const items: Item[] = [];
  const visit = async (rel: string): Promise<void> => {
    let names: string[];
    try {
      names = (await readdir(path.join(root, rel))).sort();
    } catch (err) {
      if (isMissing(err)) return; // dropped meanwhile
      throw err;
    }
    for (const name of names) {
      const childRel = rel ? `${rel}/${name}` : name;
      const file = path.join(root, childRel);
      let st: Stats;
      try {
        st = await lstat(file);
      } catch (err) {
        if (isMissing(err)) continue;
        throw err;
      }
      if (!st.isDirectory() && !st.isFile()) throw new Error(`${file} is neither a file nor a folder (links are not backed up)`);
      const what = skip(childRel, name, st.isDirectory());
      if (what === 'skip') continue;
      items.push({ name: `${prefix}/${childRel}`, file, st });
      if (st.isDirectory() && what === 'keep') await visit(childRel);
    }
  };
  await visit('');
  return items;
}

function clusterFilter(rel: string, name: string, isDir: boolean): 'skip' | 'empty' | 'keep' {
  const top = rel.split('/')[0] ?? '';
  if (SKIP_CONTENTS.has(top) && rel !== top) {
    // pg_wal keeps its folders (archive_status, summaries), empty; the backup's WAL is added after.
    return top === 'pg_wal' && isDir && !rel.slice(top.length + 1).includes('/') ? 'empty' : 'skip';
  }
  if (!isDir && skipName(name)) return 'skip';
  return 'keep';
}

/** pg_control read until two reads agree, so a read torn by a concurrent checkpoint is not kept. */
async function stableRead(file: string): Promise<Buffer> {
  let previous = await readFile(file);
  for (let i = 0; i < 10; i++) {
    const again = await readFile(file);
    if (again.equals(previous)) return again;
    previous = again;
  }
  throw new Error(`${file} keeps changing`);
}

/** WAL segment file names from the one holding `start` to the one holding `stop`, inclusive. */
export function walSegments(first: string, last: string, segmentSize: number): string[] {
  const perId = 0x1_0000_0000 / segmentSize;
  const segno = (name: string) => parseInt(name.slice(8, 16), 16) * perId + parseInt(name.slice(16, 24), 16);
  const timeline = first.slice(0, 8);
  const names: string[] = [];
  for (let n = segno(first); n <= segno(last); n++) {
    const hi = Math.floor(n / perId).toString(16).toUpperCase().padStart(8, '0');
    const lo = (n % perId).toString(16).toUpperCase().padStart(8, '0');
    names.push(`${timeline}${hi}${lo}`);
  }
  return names;
}

export interface BackupResult {
  readonly bytes: number;
  readonly files: number;
  readonly header: BackupHeader;
}

export interface BackupOptions {
  /** A session of its own on the embedded cluster (superuser), released by the caller. */
  readonly client: pg.ClientBase;
  /** DATA_DIR: its `postgres` cluster, `postgres.password`, `secret` and `uploads`. */
  readonly dataDir: string;
  /** The archive to write; refused when it exists. Written as `<file>.partial`, renamed at the end. */
  readonly file: string;
  readonly progress: (line: string) => void;
}

/** The one row a statement returns. */
function only<T>(rows: readonly T[], what: string): T {
  const [row] = rows;
  if (row === undefined) throw new Error(`${what} returned no row`);
  return row;
}

async function serverFacts(client: pg.ClientBase) {
  const { rows } = await client.query<{ version: string; num: string; sysid: string; segsize: string }>(
    `SELECT current_setting('server_version') AS version, current_setting('server_version_num') AS num,
            (SELECT system_identifier::text FROM pg_control_system()) AS sysid,
            (SELECT setting FROM pg_settings WHERE name = 'wal_segment_size') AS segsize`,
  );
  const { rows: migrations } = await client.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name DESC LIMIT 1');
  const r = only(rows, 'server settings');
  return { version: r.version, versionNum: Number(r.num), systemIdentifier: r.sysid, segmentSize: Number(r.segsize), latestMigration: migrations[0]?.name ?? null };
}

/** Writes an online backup of DATA_DIR's embedded database (and its password, secret and uploads) to `file`. */
export async function writeBackup(opts: BackupOptions): Promise<BackupResult> {
  const cluster = path.join(opts.dataDir, CLUSTER);
  const { client } = opts;
  const facts = await serverFacts(client);
  // The server answering on postgres.url must be the cluster in DATA_DIR: pg_control starts with its identifier.
  const control = await stableRead(path.join(cluster, 'global', 'pg_control'));
  if (control.readBigUInt64LE(0).toString() !== facts.systemIdentifier) {
    throw new Error(`the PostgreSQL answering at ${path.join(opts.dataDir, 'postgres.url')} is not the cluster in ${cluster}`);
  }
  if ((await readdir(path.join(cluster, 'pg_tblspc'))).length > 0) throw new Error('the cluster has tablespaces, which backup does not cover');

  const partial = `${opts.file}.partial`;
  const gzip = createGzip({ level: 1 });
  const written = pipeline(gzip, createWriteStream(partial, { flags: 'wx', mode: 0o600 }));
  written.catch(() => undefined); // awaited below; a failure also surfaces through the writes
  const tar = new TarWriter(gzip);
  const sums = new Map<string, string>();
  let bytes = 0;
  const add = async (item: Item, data?: Buffer) => {
    const mtime = item.st.mtimeMs / 1000;
    if (item.st.isDirectory()) return tar.directory(item.name, item.st.mode, mtime);
    if (data) {
      sums.set(item.name, await tar.file({ name: item.name, mode: item.st.mode, size: data.length, mtime }, [data]));
      bytes += data.length;
      return;
    }
    let handle;
    try {
      handle = await open(item.file, 'r');
    } catch (err) {
      if (isMissing(err)) return; // a relation dropped meanwhile: its removal is in the WAL
      throw err;
    }
    try {
      const size = (await handle.stat()).size;
      const source = handle.createReadStream({ start: 0, end: Math.max(0, size - 1), autoClose: false });
      sums.set(item.name, await tar.file({ name: item.name, mode: item.st.mode, size, mtime }, size ? source : ([] as Buffer[])));
      bytes += size;
    } finally {
      await handle.close();
    }
  };

  try {
    // A temporary slot keeps the WAL from the backup's start until this session ends.
    await client.query('SELECT pg_create_physical_replication_slot($1, true, true)', [`mailplatform_backup_${randomBytes(6).toString('hex')}`]);
    const started = await client.query<{ lsn: string }>('SELECT pg_backup_start($1, fast => true)::text AS lsn', [`mailplatform ${new Date().toISOString()}`]);
    const header: BackupHeader = {
      format: FORMAT,
      version: FORMAT_VERSION,
      createdAt: new Date().toISOString(),
      postgres: { version: facts.version, versionNum: facts.versionNum, systemIdentifier: facts.systemIdentifier },
      latestMigration: facts.latestMigration,
      startLsn: only(started.rows, 'pg_backup_start').lsn,
    };
    sums.set(HEADER_NAME, await tar.bytes(HEADER_NAME, Buffer.from(`${JSON.stringify(header, null, 2)}\n`)));

    const items = await walk(cluster, CLUSTER, clusterFilter);
    const total = items.reduce((n, i) => n + (i.st.isFile() ? i.st.size : 0), 0);
    opts.progress(`backup: copying ${mb(total)} of database files (the server keeps running)`);
    await tar.directory(CLUSTER, 0o700, Date.now() / 1000);
    let reported = 0;
    for (const item of items) {
      await add(item, item.name === `${CLUSTER}/global/pg_control` ? await stableRead(item.file) : undefined);
      if (total > 0 && bytes / total >= reported + 0.1) {
        reported = Math.floor((bytes / total) * 10) / 10;
        opts.progress(`backup: ${Math.round(reported * 100)}% (${mb(bytes)})`);
      }
    }

    opts.progress('backup: files copied; ending the backup (pg_backup_stop)');
    const stopped = await client.query<{ lsn: string; labelfile: string; spcmapfile: string }>('SELECT lsn::text, labelfile, spcmapfile FROM pg_backup_stop(false)');
    const stop = only(stopped.rows, 'pg_backup_stop');
    const now = { mode: 0o600, mtime: Date.now() / 1000 };
    sums.set(`${CLUSTER}/backup_label`, await tar.bytes(`${CLUSTER}/backup_label`, Buffer.from(stop.labelfile), now.mode));
    if (stop.spcmapfile) sums.set(`${CLUSTER}/tablespace_map`, await tar.bytes(`${CLUSTER}/tablespace_map`, Buffer.from(stop.spcmapfile), now.mode));

    // The WAL from the start to the stop position: the segment holding the stop is completed by a switch.
    await client.query('SELECT pg_switch_wal()');
    const names = await client.query<{ first: string; last: string }>('SELECT pg_walfile_name($1::pg_lsn) AS first, pg_walfile_name($2::pg_lsn) AS last', [header.startLsn, stop.lsn]);
    const wal = path.join(cluster, 'pg_wal');
    const { first, last } = only(names.rows, 'pg_walfile_name');
    const segments = walSegments(first, last, facts.segmentSize);
    const history = (await readdir(wal)).filter((n) => n.endsWith('.history'));
    opts.progress(`backup: adding ${segments.length} WAL segment(s) up to ${stop.lsn}`);
    for (const name of [...history, ...segments]) {
      const file = path.join(wal, name);
      if (!existsSync(file)) throw new Error(`WAL segment ${name} is missing from ${wal}: the backup would not be consistent`);
      const st = await lstat(file);
      if (!name.endsWith('.history') && st.size !== facts.segmentSize) throw new Error(`WAL segment ${name} has ${st.size} bytes, not ${facts.segmentSize}`);
      await add({ name: `${CLUSTER}/pg_wal/${name}`, file, st });
    }

    // The files beside the database: its password, the instance secret (DKIM keys and webhook secrets
    // are sealed with it) and the uploads (after the database: a file is written before its row).
    for (const name of [PASSWORD_FILE, SECRET_FILE]) {
      const file = path.join(opts.dataDir, name);
      if (existsSync(file)) await add({ name, file, st: await lstat(file) });
    }
    const uploads = path.join(opts.dataDir, UPLOADS);
    if (existsSync(uploads)) {
      await tar.directory(UPLOADS, (await lstat(uploads)).mode, Date.now() / 1000);
      const outFile = path.resolve(partial);
      for (const item of await walk(uploads, UPLOADS, (rel) => (path.join(uploads, rel) === outFile ? 'skip' : 'keep'))) await add(item);
    }

    await tar.bytes(CHECKSUMS_NAME, formatChecksums(sums));
    await tar.end();
    gzip.end();
    await written;
    const handle = await open(partial, 'r');
    await handle.sync();
    await handle.close();
    await rename(partial, opts.file);
    return { bytes, files: sums.size, header };
  } catch (err) {
    gzip.destroy();
    await written.catch(() => undefined);
    await rm(partial, { force: true });
    throw err;
  }
}

export const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MB`;
