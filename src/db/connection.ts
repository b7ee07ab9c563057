import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

// bigint (count(*)) as number: counts here stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface Db {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  close(): Promise<void>;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Maximum pooled connections. Default 20. */
  max?: number;
  /** Application name shown in pg_stat_activity. Default "mailplatform". */
  applicationName?: string;
}

/** Opens a pool and a Kysely instance over it; `close` ends both. */
export function connect(connectionString: string, opts: ConnectOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 20,
    application_name: opts.applicationName ?? 'mailplatform',
    connectionTimeoutMillis: 10_000,
  });
  // An idle client's error (database restart) must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    pool,
    db,
    close: () => db.destroy(),
  };
}

/** Fails with a clear message when the server cannot be reached. */
export async function checkConnection(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT 1');
  } finally {
    client.release();
  }
}
