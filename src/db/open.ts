import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type DatabaseConfig, ensureDataDir } from '../config.js';
import { checkConnection, connect, type Db } from './connection.js';
import { clusterExists, startEmbeddedPostgres, type EmbeddedDatabase } from './embedded.js';

/** A failure to reach or start the database, with a message fit for one error line. */
export class DatabaseStartError extends Error {}

export interface OpenDatabase extends Db {
  /** Set when this process started the embedded PostgreSQL. */
  readonly embedded: EmbeddedDatabase | undefined;
}

/** Where a running instance leaves its embedded database URL for the operator CLI. */
export const embeddedUrlFile = (dataDir: string) => path.join(dataDir, 'postgres.url');

/** Where the embedded PostgreSQL of DATA_DIR keeps its cluster. */
const clusterDir = (dataDir: string) => path.join(dataDir, 'postgres');

/** Whether DATA_DIR holds an embedded database (a server started there at least once). */
export const embeddedDatabaseExists = (dataDir: string): boolean => clusterExists(clusterDir(dataDir));

/** `host:port/db` of a PostgreSQL URL, never its password. */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

/**
 * Connects to DATABASE_URL, or starts the embedded PostgreSQL under DATA_DIR when it is
 * unset. `close()` ends the pool and stops the embedded server.
 */
export async function openDatabase(
  config: DatabaseConfig,
  opts: {
    onPostgresLog?: (line: string) => void;
    poolSize?: number;
    applicationName?: string;
    /** false: fail instead of initialising a new embedded cluster (the operator CLI). */
    create?: boolean;
  } = {},
): Promise<OpenDatabase> {
  let embedded: EmbeddedDatabase | undefined;
  let url = config.databaseUrl;
  if (!url) {
    ensureDataDir(config.dataDir);
    try {
      embedded = await startEmbeddedPostgres({ dir: clusterDir(config.dataDir), onLog: opts.onPostgresLog, create: opts.create });
    } catch (err) {
      throw new DatabaseStartError(err instanceof Error ? err.message : String(err));
    }
    url = embedded.url;
    writeFileSync(embeddedUrlFile(config.dataDir), url, { mode: 0o600 });
  }
  const db = connect(url, { max: opts.poolSize, applicationName: opts.applicationName });
  try {
    await checkConnection(db.pool);
  } catch (err) {
    await db.close().catch(() => undefined);
    await embedded?.stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new DatabaseStartError(`cannot connect to PostgreSQL at ${describeDatabaseUrl(url)}: ${reason || 'connection failed'}`);
  }
  return {
    ...db,
    embedded,
    async close() {
      await db.close();
      if (embedded) {
        rmSync(embeddedUrlFile(config.dataDir), { force: true });
        await embedded.stop();
      }
    },
  };
}
