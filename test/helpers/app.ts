import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino from 'pino';
import { inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { type AppDeps, createAppDeps } from '../../src/app-deps.js';
import { loadConfig, type Config } from '../../src/config.js';
import { connect, type Db } from '../../src/db/connection.js';
import type { KeyCache } from '../../src/http/key-cache.js';
import { memoryStore, type RateLimitStore } from '../../src/http/rate-limit.js';
import { startWorker } from '../../src/worker.js';

export const TEST_SECRET = 'test-secret-0123456789abcdefghijklmnopqrstuvwxyz';

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  db: Db;
  /** The services the app was built with (also what jobs receive). */
  deps: AppDeps;
  close(): Promise<void>;
}

/** A test configuration over the shared test database; `env` overrides variables. */
export function testConfig(env: Record<string, string> = {}): Config {
  // Tests make far more than 1,000 requests a minute to one project; the rate-limit tests set their own.
  return loadConfig({ DATABASE_URL: inject('databaseUrl'), SECRET: TEST_SECRET, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000', SIGNIN_RATE_LIMIT_PER_MINUTE: '1000000', ...env });
}

/**
 * Builds the real app on the test database. `extend` registers extra routes (test-only
 * routes) before the app is ready.
 */
export async function createTestApp(
  opts: {
    env?: Record<string, string>;
    store?: RateLimitStore;
    logger?: FastifyBaseLogger;
    /** Also run a real job worker (without the crontab) on the test database. */
    worker?: { concurrency?: number };
    extend?: (app: FastifyInstance, db: Db) => void;
    /** API key lookups cached as the server's API does (src/http/key-cache.ts); default none. */
    keyCache?: KeyCache;
  } = {},
): Promise<TestApp> {
  const config = testConfig(opts.env);
  const db = connect(inject('databaseUrl'), { max: 10 });
  // As the server's API: the hot write paths on generic-plan connections (connectForRequests).
  const hot = connect(inject('databaseUrl'), { max: 4, genericPlans: true });
  const deps: AppDeps = { ...createAppDeps(config, db.db), hotDb: hot.db, keyCache: opts.keyCache };
  const app = await buildApp(
    deps,
    { rateLimitStore: opts.store ?? memoryStore(), logger: opts.logger },
  );
  opts.extend?.(app, db);
  await app.ready();
  const runner = opts.worker
    ? await startWorker({ pool: db.pool, deps, log: pino({ level: 'silent' }), cron: false, concurrency: opts.worker.concurrency ?? 2 })
    : undefined;
  return {
    app,
    config,
    db,
    deps,
    async close() {
      await runner?.stop();
      await app.close();
      await Promise.all([db.close(), hot.close()]);
    },
  };
}
