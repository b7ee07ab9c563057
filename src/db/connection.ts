import { createHash } from 'node:crypto';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { trackPool } from '../lib/metrics.js';
import type { Database } from './schema.js';

// bigint (count(*)) as number: counts here stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface Db {
  readonly pool: pg.Pool;
  readonly db: Kysely<Database>;
  /** The connection string (another pool on the same database: {@link connectForRequests}). */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Waiting for a pooled connection took longer than the pool's acquire timeout: every connection
 * is in use. Request paths answer it with 503 and Retry-After (src/http/error-handler.ts).
 */
export class DatabaseBusyError extends Error {
  constructor(readonly waitedMs: number, options?: ErrorOptions) {
    super(`no database connection became free within ${waitedMs} ms`, options);
    this.name = 'DatabaseBusyError';
  }
}

/**
 * pg-pool's errors (pg-pool/index.js) when no connection came within connectionTimeoutMillis:
 * the checkout waited that long in its queue, or a new connection took that long to open.
 */
const ACQUIRE_TIMEOUT_MESSAGES: ReadonlySet<string> = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
]);

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Maximum pooled connections. Default 20. */
  max?: number;
  /** Application name shown in pg_stat_activity. Default "mailplatform". */
  applicationName?: string;
  /** How long a query waits for a free pooled connection before {@link DatabaseBusyError}. Default 10 s. */
  acquireTimeoutMs?: number;
  /**
   * Plan each statement once per connection: every statement becomes a named prepared statement
   * and the connections use `plan_cache_mode = force_generic_plan`. Only for a pool that runs a
   * few fixed statements on a hot path (their text must not vary with the values, and a generic
   * plan must suit them: no partial index whose predicate names a value). See {@link preparing}.
   */
  genericPlans?: boolean;
}

/**
 * Statements a generic-plan pool prepares, at most, and the longest text it prepares: beyond
 * them statements run unnamed, planned each time (multi-row INSERTs, whose text grows with
 * their rows, would otherwise fill the connections with one statement per row count).
 */
const MAX_PREPARED = 100;
const MAX_PREPARED_TEXT = 8192;

/**
 * A pooled client whose text queries run as named prepared statements (the name is a digest of
 * the text), so PostgreSQL parses and plans each statement once per connection instead of at
 * every call. Why: PostgreSQL re-plans unnamed statements at every call, and keeps choosing
 * custom plans for named ones whose parameters are arrays (their cost estimate depends on the
 * array's length), so the delivery statements spent as much time planning as executing
 * (docs/performance.md "Delivery").
 */
function preparing(client: pg.PoolClient, names: Map<string, string>): pg.PoolClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
      return (config: unknown, values?: unknown[]) => {
        if (typeof config !== 'string') return target.query(config as pg.QueryConfig, values);
        let name = names.get(config);
        if (name === undefined && names.size < MAX_PREPARED && config.length <= MAX_PREPARED_TEXT) {
          name = `g${createHash('sha1').update(config).digest('hex').slice(0, 20)}`;
          names.set(config, name);
        }
        return target.query(name === undefined ? { text: config, values } : { name, text: config, values });
      };
    },
  });
}

/** Opens a pool and a Kysely instance over it; `close` ends both. */
export function connect(connectionString: string, opts: ConnectOptions = {}): Db {
  const acquireTimeoutMs = opts.acquireTimeoutMs ?? 10_000;
  const pool = new pg.Pool({
    connectionString,
    max: opts.max ?? 20,
    application_name: opts.applicationName ?? 'mailplatform',
    connectionTimeoutMillis: acquireTimeoutMs,
    ...(opts.genericPlans && { options: '-c plan_cache_mode=force_generic_plan' }),
  });
  const names = new Map<string, string>();
  // Reported as mailplatform_db_pool_* under its application name (lib/metrics.ts) until closed.
  const untrack = trackPool(opts.applicationName ?? 'mailplatform', pool);
  // An idle client's error (database restart) must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  // Kysely gets the pool through this adapter only to give the queue timeout a type of its own.
  const checkout = {
    connect: () =>
      pool.connect().then(
        (client) => (opts.genericPlans ? preparing(client, names) : client),
        (err: unknown) => {
          if (err instanceof Error && ACQUIRE_TIMEOUT_MESSAGES.has(err.message)) throw new DatabaseBusyError(acquireTimeoutMs, { cause: err });
          throw err;
        },
      ),
    end: () => pool.end(),
  };
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: checkout }) });
  return {
    pool,
    db,
    url: connectionString,
    close: async () => {
      untrack();
      await db.destroy();
    },
  };
}

/** How long an API request waits for a pooled connection before answering 503 (docs/operations.md). */
export const REQUEST_ACQUIRE_TIMEOUT_MS = 2000;
/** Pooled connections of one API process, besides the one reserved for /health. */
export const REQUEST_POOL_SIZE = 20;

/** The API's database: its pool, and a check of the database on a connection no request can take. */
export interface RequestDb extends Db {
  /** `SELECT 1` on the reserved connection (GET /health); rejects when the database does not answer. */
  ping(): Promise<void>;
  /** The reserved connection, for the few statements of GET /health/ready (each fails after 2 s). */
  readonly health: Kysely<Database>;
  /**
   * A small pool of generic-plan connections (`genericPlans`) for the fixed statements of the
   * hot write paths (the batches of POST /v1/track and /v1/send, /v1/send's checks), which
   * otherwise spend about as long being planned as running.
   */
  readonly hot: Kysely<Database>;
}

/**
 * Connections of the API's generic-plan pool: the group-commit batches of /v1/track and /v1/send
 * (at most 4 in flight each) and /v1/send's checks.
 */
export const HOT_POOL_SIZE = 10;

/**
 * The pools of the HTTP API: requests wait at most {@link REQUEST_ACQUIRE_TIMEOUT_MS} for a
 * connection (then 503, never a long hang), and /health has one connection of its own, so it
 * answers while requests of others hold every pooled connection.
 */
export function connectForRequests(url: string, opts: { max?: number } = {}): RequestDb {
  const main = connect(url, {
    max: opts.max ?? REQUEST_POOL_SIZE,
    applicationName: 'mailplatform-api',
    acquireTimeoutMs: REQUEST_ACQUIRE_TIMEOUT_MS,
  });
  const reserved = new pg.Pool({
    connectionString: url,
    max: 1,
    application_name: 'mailplatform-health',
    connectionTimeoutMillis: REQUEST_ACQUIRE_TIMEOUT_MS,
    // A database that accepts the connection but does not answer still fails the check quickly.
    query_timeout: REQUEST_ACQUIRE_TIMEOUT_MS,
    // Kept open once opened: no reconnection when the database is busiest.
    idleTimeoutMillis: 0,
  });
  reserved.on('error', () => undefined);
  reserved.on('connect', (client) => client.on('error', () => undefined));
  const untrackReserved = trackPool('mailplatform-health', reserved);
  const health = new Kysely<Database>({ dialect: new PostgresDialect({ pool: reserved }) });
  const hot = connect(url, {
    max: HOT_POOL_SIZE,
    applicationName: 'mailplatform-api-hot',
    acquireTimeoutMs: REQUEST_ACQUIRE_TIMEOUT_MS,
    genericPlans: true,
  });
  return {
    ...main,
    hot: hot.db,
    health,
    async ping() {
      await reserved.query('SELECT 1');
    },
    async close() {
      untrackReserved();
      await Promise.all([main.close(), health.destroy(), hot.close()]);
    },
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
