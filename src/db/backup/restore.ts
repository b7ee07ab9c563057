import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, rename, rm, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { postgresAccount } from '../postgres-access.js';
import { type BackupHeader, CHECKSUMS_NAME, CLUSTER, HEADER_NAME, majorOf, parseChecksums, parseHeader, RESTORED_ENTRIES } from './manifest.js';
import { ArchiveError, readTar } from './tar.js';

// Unpacks a backup into a staging folder of DATA_DIR, checks every file against the archive's
// checksums and only then puts it in place; what DATA_DIR held before is moved aside, never deleted.

async function collect(body: AsyncIterable<Buffer>, limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    size += part.length;
    if (size > limit) throw new ArchiveError('corrupt backup: a manifest entry is too large');
    parts.push(part);
  }
  return Buffer.concat(parts);
}

const isArchiveFailure = (err: unknown) =>
  err instanceof ArchiveError || (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' && err.code.startsWith('Z_'));

export interface UnpackOptions {
  readonly file: string;
  /** Folder to unpack into (created; must not exist). */
  readonly into: string;
  /** The major version of the PostgreSQL binaries that will run the restored cluster. */
  readonly postgresMajor: number;
}

/** Unpacks and verifies an archive; throws ArchiveError for a damaged archive or a backup of another PostgreSQL major version. */
export async function unpackBackup(opts: UnpackOptions): Promise<BackupHeader> {
  await mkdir(opts.into, { mode: 0o700 });
  const sums = new Map<string, string>();
  const dirs: { target: string; mode: number; mtime: number }[] = [];
  let header: BackupHeader | undefined;
  let listed: Map<string, string> | undefined;
  try {
    for await (const entry of readTar(createReadStream(opts.file).pipe(createGunzip()))) {
      if (listed) throw new ArchiveError(`corrupt backup: ${entry.name} after ${CHECKSUMS_NAME}`);
      if (!header) {
        if (entry.name !== HEADER_NAME) throw new ArchiveError(`not a mailplatform backup (first entry ${entry.name})`);
        const data = await collect(entry.body, 1 << 20);
        header = parseHeader(data);
        sums.set(HEADER_NAME, createHash('sha256').update(data).digest('hex'));
        const major = majorOf(header.postgres.versionNum);
        if (major !== opts.postgresMajor) {
          throw new ArchiveError(
            `the backup is of PostgreSQL ${header.postgres.version} (major ${major}); this installation runs PostgreSQL ${opts.postgresMajor}: restore it with a release of ours that embeds PostgreSQL ${major}, then upgrade`,
          );
        }
        continue;
      }
      if (entry.name === CHECKSUMS_NAME) {
        listed = parseChecksums(await collect(entry.body, 64 << 20));
        continue;
      }
      const top = entry.name.split('/')[0] ?? '';
      if (!(RESTORED_ENTRIES as readonly string[]).includes(top)) throw new ArchiveError(`corrupt backup: unexpected entry ${entry.name}`);
      const target = path.join(opts.into, entry.name);
      if (entry.type === 'directory') {
        await mkdir(target, { recursive: true, mode: 0o700 });
        dirs.push({ target, mode: entry.mode, mtime: entry.mtime });
        continue;
      }
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      const hash = createHash('sha256');
      const out = createWriteStream(target, { flags: 'wx', mode: entry.mode & 0o777 });
      await pipeline(entry.body, async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          hash.update(chunk);
          yield chunk;
        }
      }, out);
      await utimes(target, entry.mtime, entry.mtime);
      sums.set(entry.name, hash.digest('hex'));
    }
  } catch (err) {
    if (isArchiveFailure(err) && !(err instanceof ArchiveError)) {
      throw new ArchiveError(`corrupt backup: the compressed data is damaged (${err instanceof Error ? err.message : String(err)})`);
    }
    throw err;
  }
  if (!header) throw new ArchiveError('not a mailplatform backup (empty archive)');
  if (!listed) throw new ArchiveError(`corrupt backup: no ${CHECKSUMS_NAME} (truncated archive?)`);
  for (const [name, sum] of listed) {
    const actual = sums.get(name);
    if (actual === undefined) throw new ArchiveError(`corrupt backup: ${name} is missing`);
    if (actual !== sum) throw new ArchiveError(`corrupt backup: checksum mismatch for ${name}`);
  }
  for (const name of sums.keys()) if (!listed.has(name)) throw new ArchiveError(`corrupt backup: ${name} is not in ${CHECKSUMS_NAME}`);
  if (!existsSync(path.join(opts.into, CLUSTER, 'PG_VERSION')) || !existsSync(path.join(opts.into, CLUSTER, 'backup_label'))) {
    throw new ArchiveError('corrupt backup: no database cluster in it');
  }
  for (const d of dirs.reverse()) {
    await chmod(d.target, d.mode & 0o777);
    await utimes(d.target, d.mtime, d.mtime);
  }
  await chmod(path.join(opts.into, CLUSTER), 0o700); // PostgreSQL refuses a data folder open to others
  return header;
}

/** Gives the restored cluster to the user PostgreSQL runs as (the `postgres` user when we are root), as the embedded start does. */
export async function ownCluster(cluster: string): Promise<void> {
  const account = postgresAccount();
  if (!account) return;
  const visit = async (p: string): Promise<void> => {
    await chown(p, account.uid, account.gid);
    if ((await stat(p)).isDirectory()) for (const name of await readdir(p)) await visit(path.join(p, name));
  };
  await visit(cluster);
}

/** The entries of DATA_DIR a restore would replace, that exist now. */
export const presentEntries = (dataDir: string): string[] => RESTORED_ENTRIES.filter((name) => existsSync(path.join(dataDir, name)));

/** Moves `names` of DATA_DIR into `aside` (created), keeping them whole. */
export async function moveAside(dataDir: string, names: readonly string[], aside: string): Promise<void> {
  await mkdir(aside, { mode: 0o700 });
  for (const name of names) await rename(path.join(dataDir, name), path.join(aside, name));
}

/** Moves the unpacked entries from `staging` into DATA_DIR (same file system: renames) and removes `staging`. */
export async function putInPlace(staging: string, dataDir: string): Promise<void> {
  for (const name of await readdir(staging)) await rename(path.join(staging, name), path.join(dataDir, name));
  await rm(staging, { recursive: true, force: true });
}

/** The pid of a live postmaster on `cluster`, from its postmaster.pid. */
export function runningPostmaster(cluster: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(cluster, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  try {
    // A pid reused by another program after PostgreSQL was killed is not a running server.
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres' ? pid : undefined;
  } catch {
    return pid; // no /proc: assume it is
  }
}
