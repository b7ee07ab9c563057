import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { checkConnection, connect, type Db } from '../db/connection.js';
import { migrateToLatest } from '../db/migrate.js';
import { embeddedUrlFile, openDatabase } from '../db/open.js';

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

/**
 * The database the CLI works on: DATABASE_URL; else the embedded one of a running instance
 * (its URL file in DATA_DIR); else the embedded PostgreSQL under DATA_DIR, started here and
 * stopped by `close()`. Migrated to the latest schema, so a fresh DATA_DIR works too.
 */
export async function openCliDatabase(config: Config): Promise<Db> {
  const running = config.databaseUrl ? undefined : await connectToRunningInstance(config.dataDir);
  const db = running ?? (await openDatabase(config, { poolSize: POOL.max, applicationName: POOL.applicationName }));
  try {
    await migrateToLatest(db.db, db.pool);
  } catch (err) {
    await db.close();
    throw err;
  }
  return db;
}
