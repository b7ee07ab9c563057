import type { FastifyInstance } from 'fastify';
import { parseCrontab } from 'graphile-worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/http/errors.js';
import { deleteExpiredIdempotencyKeys } from '../../src/http/idempotency.js';
import { CRONTAB, createTaskList, Tasks } from '../../src/jobs/index.js';
import type { Db } from '../../src/db/connection.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';

/**
 * Test-only stand-in for POST /v1/send and /v1/track: records one effect row per
 * performed request, in the same transaction as its Idempotency-Key claim.
 */
function addIdempotentRoutes(app: FastifyInstance, db: Db): void {
  app.post<{ Body: { fail?: 'client' | 'server' | 'unavailable' } }>('/__test/perform', { config: { idempotent: true } }, async (request) => {
    const projectId = request.project?.id ?? '';
    return db.db.transaction().execute(async (trx) => {
      await sql`SELECT pg_sleep(0.05)`.execute(trx); // keep concurrent requests overlapping
      await sql`INSERT INTO test_idem_effects (project_id) VALUES (${projectId})`.execute(trx);
      await request.idempotency?.claim(trx);
      if (request.body?.fail === 'client') throw new ApiError(400, 'BAD_REQUEST', 'refused after claiming');
      if (request.body?.fail === 'server') throw new Error('crashed after claiming');
      // What node-postgres throws when the server goes away under the statement (restart, failover).
      if (request.body?.fail === 'unavailable') throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
      return { performed: true };
    });
  });
  // A handler that never claims: the key is recorded after a 2xx answer.
  app.post('/__test/noclaim', { config: { idempotent: true } }, async () => ({ ok: true }));
}

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp({ extend: addIdempotentRoutes });
  await sql`CREATE TABLE IF NOT EXISTS test_idem_effects (project_id uuid NOT NULL)`.execute(t.db.db);
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const perform = (key: string | undefined, body: object = {}, p: TestProject = project) =>
  t.app.inject({
    method: 'POST',
    url: '/__test/perform',
    headers: { ...bearer(p.secret), ...(key !== undefined && { 'idempotency-key': key }) },
    payload: body,
  });

async function effects(p: TestProject = project): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM test_idem_effects WHERE project_id = ${p.id}`.execute(t.db.db);
  return rows[0]?.n ?? 0;
}

describe('Idempotency-Key', () => {
  it('performs once and answers a reuse with 409 IDEMPOTENCY_KEY_REUSED and the original request', async () => {
    const before = await effects();
    const first = await perform('order-1001');
    expect(first.statusCode).toBe(200);
    const again = await perform('order-1001');
    const error = expectEnvelope(again, 409, 'IDEMPOTENCY_KEY_REUSED');
    expect(error.details).toEqual({
      key: 'order-1001',
      originalRequest: { method: 'POST', path: '/__test/perform' },
      originalRequestAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      originalStatusCode: 200,
    });
    expect(await effects()).toBe(before + 1);
  });

  it('performs exactly once when ten requests with one key race', async () => {
    const before = await effects();
    const results = await Promise.all(Array.from({ length: 10 }, () => perform('race-key')));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
    expect(await effects()).toBe(before + 1);
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(r.json().error.details.originalStatusCode).toBe(200);
    }
  });

  it('frees the key after a 4xx answer, so a corrected retry is performed', async () => {
    const before = await effects();
    expect((await perform('retry-me', { fail: 'client' })).statusCode).toBe(400);
    expect(await effects()).toBe(before);
    expect((await perform('retry-me')).statusCode).toBe(200);
    expect(await effects()).toBe(before + 1);
  });

  it('leaves the key free after a 503 for a database that went away (its transaction rolled back): the retry is performed', async () => {
    const before = await effects();
    const failed = await perform('db-gone', { fail: 'unavailable' });
    expectEnvelope(failed, 503, 'SERVICE_UNAVAILABLE');
    expect(failed.headers['retry-after']).toBe('5');
    expect(await effects()).toBe(before);
    expect((await perform('db-gone')).statusCode).toBe(200);
    expect(await effects()).toBe(before + 1);
  });

  it('keeps the key after a 5xx answer', async () => {
    expect((await perform('server-fails', { fail: 'server' })).statusCode).toBe(500);
    const again = await perform('server-fails');
    expect(expectEnvelope(again, 409, 'IDEMPOTENCY_KEY_REUSED').details.originalStatusCode).toBe(500);
  });

  it('records the key of a handler that does not claim it, after its 2xx answer', async () => {
    const send = () =>
      t.app.inject({ method: 'POST', url: '/__test/noclaim', headers: { ...bearer(project.secret), 'idempotency-key': 'late-record' } });
    expect((await send()).statusCode).toBe(200);
    expect((await send()).statusCode).toBe(409);
  });

  it('scopes keys to the project', async () => {
    const other = await newProject(t.app);
    expect((await perform('shared-key')).statusCode).toBe(200);
    expect((await perform('shared-key', {}, other.project)).statusCode).toBe(200);
    expect(await effects(other.project)).toBe(1);
  });

  it('performs every request without a key', async () => {
    const before = await effects();
    await perform(undefined);
    await perform(undefined);
    expect(await effects()).toBe(before + 2);
  });

  it('rejects keys outside 1–255 printable ASCII with 422 and performs nothing', async () => {
    const before = await effects();
    for (const [key, code] of [['', 'too_small'], ['k'.repeat(256), 'too_big'], ['caf\u00e9', 'invalid_string']] as const) {
      const res = await perform(key);
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors).toEqual([expect.objectContaining({ field: 'Idempotency-Key', code })]);
    }
    expect((await perform('k'.repeat(255))).statusCode).toBe(200);
    expect((await perform(' !~ printable ~! ')).statusCode).toBe(200);
    expect(await effects()).toBe(before + 2);
  });

  it('treats an expired key as new, and the cleanup deletes expired keys', async () => {
    const ttl = t.config.idempotencyTtlHours;
    expect(ttl).toBe(24);
    await t.db.db
      .insertInto('idempotency_keys')
      .values([
        { project_id: project.id, key: 'old-key', method: 'POST', path: '/__test/perform', status_code: 200, created_at: sql`now() - interval '25 hours'` },
        { project_id: project.id, key: 'old-key-2', method: 'POST', path: '/__test/perform', status_code: 200, created_at: sql`now() - interval '25 hours'` },
        { project_id: project.id, key: 'fresh-key', method: 'POST', path: '/__test/perform', status_code: 200, created_at: sql`now() - interval '23 hours'` },
      ])
      .execute();
    expect((await perform('old-key')).statusCode).toBe(200);
    expect((await perform('fresh-key')).statusCode).toBe(409);

    expect(await deleteExpiredIdempotencyKeys(t.db.db, ttl)).toBeGreaterThanOrEqual(1);
    const left = await t.db.db.selectFrom('idempotency_keys').select('key').where('project_id', '=', project.id).execute();
    const keys = left.map((r) => r.key);
    expect(keys).toContain('fresh-key');
    expect(keys).toContain('old-key'); // taken over by the new request, so it is fresh again
    expect(keys).not.toContain('old-key-2');
  });

  it('is wired as a cron job of the worker', () => {
    const items = parseCrontab(CRONTAB);
    expect(items.map((i) => i.task)).toContain(Tasks.cleanupIdempotencyKeys);
    expect(createTaskList(t.deps)[Tasks.cleanupIdempotencyKeys]).toBeTypeOf('function');
  });
});
