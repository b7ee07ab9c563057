import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { mb, restoreDataDir, writeBackup } from '../../db/backup/index.js';
import { defineStandaloneCommand } from '../command.js';
import { openCliDatabase } from '../database.js';
import { CliError, required, toggle } from '../flags.js';

const external = (what: string) =>
  new CliError(
    `DATABASE_URL is set: ${what} covers the embedded database only; use your PostgreSQL's own tools (pg_dump/pg_restore of the server's major version, or your provider's backups)`,
  );

const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

export const backup = defineStandaloneCommand({
  name: 'backup',
  summary: 'Write an online backup of the embedded database (with its secret and uploads) to one .tar.gz file; the server may keep running',
  flags: {
    file: required('FILE', 'the archive to write (must not exist), e.g. /backups/mail-2025-01-31.tar.gz'),
  },
  async run({ config, flags, print, note }) {
    if (config.databaseUrl) throw external('backup');
    const file = path.resolve(flags.file);
    if (existsSync(file)) throw new CliError(`${file} already exists: choose a new file name`);
    if (!existsSync(path.dirname(file))) throw new CliError(`no folder ${path.dirname(file)} for the backup file`);
    if (`${file}${path.sep}`.startsWith(path.join(config.dataDir, 'postgres') + path.sep)) {
      throw new CliError('the backup file cannot be inside DATA_DIR/postgres');
    }
    const started = Date.now();
    const database = await openCliDatabase(config, note, { migrate: false });
    try {
      const client = await database.pool.connect();
      let result;
      try {
        result = await writeBackup({ client, dataDir: config.dataDir, file, progress: note });
      } finally {
        client.release(true); // ends the session: a backup left unfinished by an error is aborted with it
      }
      print(`backup written: ${file} (${mb(statSync(file).size)} compressed, ${mb(result.bytes)} of files, ${seconds(started)})`);
    } finally {
      await database.close();
    }
  },
});

export const restore = defineStandaloneCommand({
  name: 'restore',
  summary: 'Restore a backup into DATA_DIR (the server stopped); an existing database is moved aside with --force, never deleted',
  flags: {
    file: required('FILE', 'the archive written by backup'),
    force: toggle('move the database DATA_DIR holds aside (into DATA_DIR/before-restore-<time>) instead of refusing'),
  },
  async run({ config, flags, print, note }) {
    if (config.databaseUrl) throw external('restore');
    const started = Date.now();
    const result = await restoreDataDir({ file: path.resolve(flags.file), dataDir: config.dataDir, force: flags.force, progress: note });
    print(
      `restored ${path.resolve(flags.file)} into ${config.dataDir}: backup of ${result.header.createdAt}, PostgreSQL ${result.header.postgres.version}, schema at ${result.latestMigration ?? 'none'} (${seconds(started)})`,
    );
  },
});
