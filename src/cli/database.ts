import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { DatabaseConfig } from '../config.js';
import { checkConnection, connect, type Db } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { describeDatabaseUrl, embeddedDatabaseExists, embeddedUrlFile, openDatabase } from '../db/open.js';
import { CliError } from './flags.js';

const POOL = { max: 2, applicationName: 'mailplatform-admin' } as const;

/** The embedded database of a running instance, if one left its URL in DATA_DIR and answers. */
async function connectToRunningInstance(dataDir: string): Promise<Db | undefined> {
  let url: string;
  try {
    url = readFileSync(embeddedUrlFile(dataDir), 'utf8').trim();
  } catch {
    return undefined;
  }
  if (!url) return undefined;
  const db = connect(url, POOL);
  try {
    await checkConnection(db.pool);
    return db;
  } catch {
    // A stale file (the instance was killed): start the embedded database ourselves.
    await db.close().catch(() => undefined);
    return undefined;
  }
}

/** The database as the server's rules find it, never a new one; `where` says which it is. */
async function open(config: DatabaseConfig): Promise<{ db: Db; where: string }> {
  const options = { poolSize: POOL.max, applicationName: POOL.applicationName, create: false };
  if (config.databaseUrl) {
    return { db: await openDatabase(config, options), where: `DATABASE_URL ${describeDatabaseUrl(config.databaseUrl)}` };
  }
  const running = await connectToRunningInstance(config.dataDir);
  if (running) return { db: running, where: `the embedded database in ${config.dataDir} (running server)` };
  // Starting PostgreSQL on an empty DATA_DIR would initialise a new, empty database: an operator
  // who forgot the server's DATA_DIR would then work on the wrong one without noticing.
  if (!embeddedDatabaseExists(config.dataDir)) {
    throw new CliError(`no database in ${config.dataDir}: start the server once with \`npm start\` or pass DATA_DIR/DATABASE_URL`);
  }
  return { db: await openDatabase(config, options), where: `the embedded database in ${config.dataDir} (started for this command)` };
}

/**
 * The database the CLI works on, by the server's rules: DATABASE_URL; else the embedded one of
 * a running instance (its URL file in DATA_DIR); else the embedded PostgreSQL under DATA_DIR,
 * started here and stopped by `close()`. It never creates one: no cluster in DATA_DIR, or a
 * database the server never set up, is refused. `note` receives the line saying which it opened.
 * `migrate: false` (backup) leaves the schema as it is.
 */
export async function openCliDatabase(config: DatabaseConfig, note: (line: string) => void, opts: { migrate?: boolean } = {}): Promise<Db> {
  const { db, where } = await open(config);
  try {
    const { rows } = await sql<{ present: boolean }>`SELECT to_regclass('kysely_migration') IS NOT NULL AS present`.execute(db.db);
    if (!rows[0]?.present) {
      throw new CliError(`${where} has no mailplatform tables: start the server once on it (\`npm start\`)`);
    }
    // The server migrates on start; a CLI newer than the running server brings the schema up too.
    if (opts.migrate !== false) await migrateToLatest(db.db, db.pool);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  note(`using ${where}`);
  return db;
}
