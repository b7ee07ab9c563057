import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.js';
import type { AppDeps } from '../../../src/app-deps.js';
import { connect } from '../../../src/db/connection.js';
import { MIGRATION_TABLE, shippedMigrationNames } from '../../../src/db/migrate.js';
import { memoryStore } from '../../../src/http/rate-limit.js';
import { startWorker } from '../../../src/worker.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';

/**
 * /health, /health/live and /health/ready on a database of their own: the tests remove a
 * migration's row and stage worker heartbeats, which no other file may see.
 */
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => {
  await t?.close();
});

async function withApp(deps: Partial<AppDeps>, fn: (app: FastifyInstance) => Promise<void>): Promise<void> {
  const app = await buildApp({ ...t.deps, ...deps }, { rateLimitStore: memoryStore() });
  try {
    await fn(app);
  } finally {
    await app.close();
  }
}

const get = (app: FastifyInstance, url: string) => app.inject({ method: 'GET', url });

describe('GET /health/ready', () => {
  it('is 200 with its checks once migrated, not waiting on workers in an API-only process', async () => {
    const res = await get(t.app, '/health/ready');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', migrations: 'ok', workers: 'skipped' } });
  });

  it('is 503 once the process is shutting down (SHUTDOWN_DELAY_SECONDS: still serving, out of the balancer)', async () => {
    let stopping = false;
    await withApp({ stopping: () => stopping }, async (app) => {
      expect((await get(app, '/health/ready')).statusCode).toBe(200);
      stopping = true;
      const error = expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE');
      expect(error.message).toBe('Not ready: the process is shutting down');
      expect((await get(app, '/health/live')).statusCode).toBe(200);
    });
  });

  it('is 503 naming the migration a database lacks; /health and /health/live stay 200', async () => {
    const last = shippedMigrationNames().at(-1) ?? '';
    const removed = await sql<{ name: string; timestamp: string }>`DELETE FROM ${sql.table(MIGRATION_TABLE)} WHERE name = ${last} RETURNING name, timestamp`.execute(t.db.db);
    expect(removed.rows).toHaveLength(1);
    try {
      const error = expectEnvelope(await get(t.app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE');
      expect(error.message).toBe(`Not ready: migrations not applied: ${last}`);
      expect(error.details).toEqual({ checks: { database: 'ok', migrations: 'failed', workers: 'skipped' }, missingMigrations: [last] });
      expect((await get(t.app, '/health')).statusCode).toBe(200);
      expect((await get(t.app, '/health/live')).statusCode).toBe(200);
    } finally {
      for (const r of removed.rows) await sql`INSERT INTO ${sql.table(MIGRATION_TABLE)} (name, timestamp) VALUES (${r.name}, ${r.timestamp})`.execute(t.db.db);
    }
    expect((await get(t.app, '/health/ready')).statusCode).toBe(200);
  });

  it("wants a recent heartbeat from each of this process's workers", async () => {
    const ids = [`health-test-${Date.now()}`];
    await withApp({ workers: { ids, deadAfterSeconds: 30 } }, async (app) => {
      // Not started yet: no heartbeat at all.
      let error = expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE');
      expect(error.details).toEqual({ checks: { database: 'ok', migrations: 'ok', workers: 'failed' }, silentWorkers: ids });

      await sql`INSERT INTO worker_heartbeats (worker_id, host, pid) VALUES (${ids[0]}, 'test', 1)`.execute(t.db.db);
      expect((await get(app, '/health/ready')).json()).toEqual({ status: 'ok', checks: { database: 'ok', migrations: 'ok', workers: 'ok' } });

      // Silent for longer than a live worker ever is.
      await sql`UPDATE worker_heartbeats SET beat_at = now() - interval '31 seconds' WHERE worker_id = ${ids[0]}`.execute(t.db.db);
      error = expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE');
      expect(error.message).toMatch(/^Not ready: no heartbeat in the last 30 s from this process's job worker/);
      expect(error.details).toMatchObject({ checks: { workers: 'failed' }, silentWorkers: ids });
      expect((await get(app, '/health/live')).statusCode).toBe(200);
    });
    await withApp({ workers: { ids: [], deadAfterSeconds: 30 } }, async (app) => {
      expect(expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE').message).toBe('Not ready: the job worker has not started');
    });
  });

  it("is ready with a real worker's heartbeats, and not once it stopped", async () => {
    const runner = await startWorker({ pool: t.db.pool, deps: t.deps, log: pino({ level: 'silent' }), cron: false, concurrency: 1 });
    let stopped = false;
    try {
      expect(runner.workerIds).toHaveLength(2);
      await withApp({ workers: { ids: runner.workerIds, deadAfterSeconds: 30 } }, async (app) => {
        await until('the first heartbeats', async () => (await get(app, '/health/ready')).statusCode === 200, { timeoutMs: 10_000 });
        await runner.stop();
        stopped = true;
        expect(expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE').details).toMatchObject({ silentWorkers: runner.workerIds });
      });
    } finally {
      if (!stopped) await runner.stop();
    }
  });
});

describe('a database that does not answer', () => {
  it('fails /health and /health/ready with 503 (no database detail leaked); /health/live stays 200', async () => {
    // Nothing listens on port 1: every connection is refused at once.
    const dead = connect('postgres://mailplatform@127.0.0.1:1/none', { max: 1, acquireTimeoutMs: 500 });
    try {
      await withApp(
        {
          db: dead.db,
          ping: async () => {
            await sql`SELECT 1`.execute(dead.db);
          },
        },
        async (app) => {
          expectEnvelope(await get(app, '/health'), 503, 'SERVICE_UNAVAILABLE');
          const error = expectEnvelope(await get(app, '/health/ready'), 503, 'SERVICE_UNAVAILABLE');
          expect(error.message).toBe('Not ready: the database is not answering');
          expect(error.details).toEqual({ checks: { database: 'failed', migrations: 'skipped', workers: 'skipped' } });
          expect(JSON.stringify(error)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/);
          const live = await get(app, '/health/live');
          expect(live.statusCode).toBe(200);
          expect(live.json()).toEqual({ status: 'ok' });
        },
      );
    } finally {
      await dead.close();
    }
  });
});
