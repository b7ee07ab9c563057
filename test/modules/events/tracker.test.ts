import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import { sql } from 'kysely';
import { ApiError } from '../../../src/http/errors.js';
import { claimIdempotencyKeys } from '../../../src/http/idempotency.js';
import { TrackBody } from '../../../src/modules/events/events.schema.js';
import { handleTrack } from '../../../src/modules/events/track.routes.js';
import { createTracker, type Tracker } from '../../../src/modules/events/track.service.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { expectEnvelope } from '../../helpers/envelope.js';

/** A tracker that holds one call for 300 ms and refuses a second meanwhile. */
let tiny: Tracker | undefined;
function addTinyTrackRoute(app: FastifyInstance, db: Db): void {
  const tracker = createTracker(db.db, { ttlHours: 24, batch: { maxQueued: 1, maxWaitMs: 300 } });
  tiny = tracker;
  app.withTypeProvider<ZodTypeProvider>().post('/__test/track', {
    config: { auth: 'public', idempotent: true },
    schema: { body: TrackBody },
    handler: (request) => handleTrack(tracker, request, request.body),
  });
}

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ extend: addTinyTrackRoute });
});
afterAll(async () => {
  await tiny?.close();
  await t.close();
});

const eventCount = async (projectId: string) =>
  (await t.db.db.selectFrom('events').select('id').where('project_id', '=', projectId).execute()).length;

describe('track overload and shutdown', () => {
  it('answers 503 with Retry-After when the queue is full, and leaves that Idempotency-Key free', async () => {
    const { project } = await newProject(t.app);
    const send = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/__test/track',
        headers: { ...bearer(project.public), 'idempotency-key': key },
        payload: { email: `${key}@example.com`, event: 'x' },
      });
    const [first, second] = await Promise.all([send('k1'), send('k2')]);
    expect(first?.statusCode).toBe(200);
    if (!second) throw new Error('no answer');
    expectEnvelope(second, 503, 'SERVICE_UNAVAILABLE');
    expect(second.headers['retry-after']).toBe('1');
    expect(await eventCount(project.id)).toBe(1);

    const retried = await send('k2');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(await eventCount(project.id)).toBe(2);
  });

  it('writes every waiting call on close, before resolving, then refuses new calls with 503', async () => {
    const { project } = await newProject(t.app);
    const tracker = createTracker(t.db.db, { ttlHours: 24, batch: { maxWaitMs: 60_000 } });
    const pending = [1, 2, 3].map((i) => tracker.track({ projectId: project.id, email: `drain${i}@example.com`, event: 'drain' }));
    expect(await eventCount(project.id)).toBe(0);
    await tracker.close();
    expect(await eventCount(project.id)).toBe(3);
    const results = await Promise.all(pending);
    expect(new Set(results.map((r) => r.event)).size).toBe(3);
    const late = tracker.track({ projectId: project.id, email: 'late@example.com', event: 'drain' });
    await expect(late).rejects.toBeInstanceOf(ApiError);
    await expect(late).rejects.toMatchObject({ statusCode: 503 });
  });
});

describe('a failing batch', () => {
  it('retries its calls one by one, so only the bad call fails', async () => {
    const { project } = await newProject(t.app);
    const tracker = createTracker(t.db.db, { ttlHours: 24, batch: { maxWaitMs: 50 } });
    const call = (i: number, data: Record<string, string>) => tracker.track({ projectId: project.id, email: `b${i}@example.com`, event: 'batch', data });
    // PostgreSQL refuses NUL in jsonb (the HTTP schema refuses it first; the service alone does not).
    const results = await Promise.allSettled([call(1, { ok: 'yes' }), call(2, { bad: 'a\u0000b' }), call(3, { ok: 'yes' })]);
    await tracker.close();
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const emails = await t.db.db.selectFrom('contacts').select('email').where('project_id', '=', project.id).orderBy('email').execute();
    expect(emails.map((c) => c.email)).toEqual(['b1@example.com', 'b3@example.com']);
    expect(await eventCount(project.id)).toBe(2);
  });
});

describe('claimIdempotencyKeys', () => {
  it('claims new and expired keys in one statement and leaves live ones alone', async () => {
    const { project } = await newProject(t.app);
    const old = { project_id: project.id, method: 'POST', path: '/v1/track', status_code: 200 };
    await t.db.db
      .insertInto('idempotency_keys')
      .values([
        { ...old, key: 'live', created_at: sql`now() - interval '1 hour'` },
        { ...old, key: 'expired', created_at: sql`now() - interval '25 hours'` },
      ])
      .execute();
    const claim = (key: string) => ({ key, method: 'POST', path: '/events/track' });
    const claimed = await t.db.db
      .transaction()
      .execute((trx) => claimIdempotencyKeys(trx, project.id, [claim('new'), claim('live'), claim('expired')], 24));
    expect([...claimed].sort()).toEqual(['expired', 'new']);
    const rows = await t.db.db.selectFrom('idempotency_keys').select(['key', 'path']).where('project_id', '=', project.id).orderBy('key').execute();
    expect(rows).toEqual([
      { key: 'expired', path: '/events/track' },
      { key: 'live', path: '/v1/track' },
      { key: 'new', path: '/events/track' },
    ]);
    // Rolled back with its transaction: the keys stay free.
    await t.db.db
      .transaction()
      .execute(async (trx) => {
        await claimIdempotencyKeys(trx, project.id, [claim('rolled-back')], 24);
        throw new Error('rollback');
      })
      .catch(() => undefined);
    const left = await t.db.db.selectFrom('idempotency_keys').select('key').where('project_id', '=', project.id).where('key', '=', 'rolled-back').execute();
    expect(left).toEqual([]);
  });
});

describe('a batch with a contact changed by a concurrent write', () => {
  it('writes that call in a transaction of its own after the others committed, each event once, no change lost', async () => {
    const { project } = await newProject(t.app);
    const tracker = createTracker(t.db.db, { ttlHours: 24, batch: { maxWaitMs: 50 } });
    await tracker.track({ projectId: project.id, email: 'busy@example.com', event: 'seed', data: { seed: 1 } });
    const other = await t.db.pool.connect();
    try {
      // Another writer holds the contact: the batch's statement reads it, then waits on its lock.
      await other.query('BEGIN');
      await other.query(`UPDATE contacts SET data = data || '{"other": true}' WHERE project_id = $1 AND email = 'busy@example.com'`, [project.id]);
      const calls = Promise.all([
        tracker.track({ projectId: project.id, email: 'busy@example.com', event: 'batch', data: { mine: 1 } }),
        tracker.track({ projectId: project.id, email: 'free@example.com', event: 'batch', data: { mine: 1 } }),
      ]);
      // Polled on another connection: inside `other`'s transaction pg_stat_activity would not change.
      const waiting = async () =>
        (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%WITH input AS%'`.execute(t.db.db)).rows[0]?.n ?? 0;
      for (let i = 0; i < 200 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await waiting()).toBe(1);
      await other.query('COMMIT');
      const [busy, free] = await calls;
      expect(busy?.contact).toBeDefined();
      expect(free?.contact).toBeDefined();
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      other.release();
    }
    await tracker.close();
    const events = await t.db.db.selectFrom('events').innerJoin('contacts', 'contacts.id', 'events.contact_id').select(['contacts.email', 'events.name'])
      .where('events.project_id', '=', project.id).where('events.name', '=', 'batch').orderBy('contacts.email').execute();
    expect(events).toEqual([{ email: 'busy@example.com', name: 'batch' }, { email: 'free@example.com', name: 'batch' }]);
    const busyRow = await t.db.db.selectFrom('contacts').select('data').where('project_id', '=', project.id).where('email', '=', 'busy@example.com').executeTakeFirstOrThrow();
    expect(busyRow.data).toEqual({ seed: 1, other: true, mine: 1 });
  });
});
