import { ArchiveError } from './tar.js';

// What a backup archive holds, by name. The first entry describes the backup (checked before
// anything is unpacked), the last one lists the SHA-256 of every file, in `sha256sum` format.

/** First entry: what the backup is. */
export const HEADER_NAME = 'mailplatform-backup.json';
/** Last entry: `<sha256>  <name>` per file (every other file of the archive). */
export const CHECKSUMS_NAME = 'mailplatform-backup.sha256';
export const FORMAT = 'mailplatform-backup';
export const FORMAT_VERSION = 1;

/** The entries of DATA_DIR a backup holds, as they are named in DATA_DIR and in the archive. */
export const CLUSTER = 'postgres';
export const PASSWORD_FILE = 'postgres.password';
export const SECRET_FILE = 'secret';
export const UPLOADS = 'uploads';
export const RESTORED_ENTRIES = [CLUSTER, PASSWORD_FILE, SECRET_FILE, UPLOADS] as const;

export interface BackupHeader {
  readonly format: typeof FORMAT;
  readonly version: typeof FORMAT_VERSION;
  readonly createdAt: string;
  readonly postgres: {
    /** `18.4` */
    readonly version: string;
    /** server_version_num: 180004 */
    readonly versionNum: number;
    readonly systemIdentifier: string;
  };
  /** The newest migration applied when the backup started (kysely_migration). */
  readonly latestMigration: string | null;
  /** WAL position where the backup starts (pg_backup_start). */
  readonly startLsn: string;
}

export const majorOf = (versionNum: number): number => Math.floor(versionNum / 10_000);

/** The header entry, checked: an archive of another program or format version is refused. */
export function parseHeader(data: Buffer): BackupHeader {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    throw new ArchiveError(`not a mailplatform backup: ${HEADER_NAME} is not JSON`);
  }
  const h = parsed as Partial<BackupHeader> | null;
  if (!h || h.format !== FORMAT) throw new ArchiveError('not a mailplatform backup');
  if (h.version !== FORMAT_VERSION) {
    throw new ArchiveError(`backup format version ${String(h.version)} is not supported by this version (${FORMAT_VERSION}): restore it with the release that wrote it`);
  }
  if (typeof h.postgres?.versionNum !== 'number' || typeof h.startLsn !== 'string' || typeof h.createdAt !== 'string') {
    throw new ArchiveError(`not a mailplatform backup: ${HEADER_NAME} is incomplete`);
  }
  return h as BackupHeader;
}

export function formatChecksums(sums: ReadonlyMap<string, string>): Buffer {
  return Buffer.from([...sums].map(([name, sum]) => `${sum}  ${name}\n`).join(''), 'utf8');
}

export function parseChecksums(data: Buffer): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of data.toString('utf8').split('\n')) {
    if (!line) continue;
    const [, sum, name] = /^([0-9a-f]{64}) {2}(.+)$/.exec(line) ?? [];
    if (!sum || !name) throw new ArchiveError(`corrupt backup: unreadable line in ${CHECKSUMS_NAME}`);
    sums.set(name, sum);
  }
  return sums;
}
