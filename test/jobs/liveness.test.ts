import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beat, DEAD_AFTER_SECONDS, releaseDeadWorkers } from '../../src/jobs/liveness.js';
import { Tasks } from '../../src/jobs/queue.js';
import { createSendTestApp, type SendTestApp } from '../modules/emails/helpers.js';

// Own database: releasing locks must not touch the jobs of other test files' workers.
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A job locked by `worker` `lockedSecondsAgo` ago; `retired`: as graphile-worker leaves a running job whose key was re-used. */
async function lockedJob(worker: string, lockedSecondsAgo: number, opts: { retired?: boolean; failed?: boolean } = {}): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    SELECT id::text FROM graphile_worker.add_job(${Tasks.sendEmail}, json_build_object('emailId', gen_random_uuid()::text), max_attempts => 10)`.execute(t.db.db);
  const id = rows[0]?.id ?? '';
  await sql`
    UPDATE graphile_worker._private_jobs SET locked_by = ${worker}, locked_at = now() - make_interval(secs => ${lockedSecondsAgo}),
      attempts = CASE WHEN ${opts.retired === true || opts.failed === true} THEN max_attempts ELSE 1 END,
      last_error = CASE WHEN ${opts.failed === true} THEN 'boom' END, key = NULL
    WHERE id = ${id}::bigint`.execute(t.db.db);
  return id;
}

const jobs = async (ids: string[]) => {
  const { rows } = await sql<{ id: string; locked_by: string | null }>`
    SELECT id::text, locked_by FROM graphile_worker._private_jobs WHERE id = ANY(${ids}::bigint[]) ORDER BY id`.execute(t.db.db);
  return new Map(rows.map((r) => [r.id, r.locked_by]));
};

describe('releasing the jobs of dead workers', () => {
  it('releases locks held by workers silent for DEAD_AFTER_SECONDS; keeps live and recent ones', async () => {
    const old = DEAD_AFTER_SECONDS + 30;
    await beat(t.db.db, 'pool-live');
    await beat(t.db.db, 'pool-stale');
    await t.db.db.updateTable('worker_heartbeats').set({ beat_at: sql`now() - make_interval(secs => ${old})` }).where('worker_id', '=', 'pool-stale').execute();
    const dead = await lockedJob('pool-dead', old); // never beat (or its row is gone)
    const stale = await lockedJob('pool-stale', old); // stopped beating
    const live = await lockedJob('pool-live', old); // long job of a live worker
    const recent = await lockedJob('pool-new', 2); // just locked: its worker may not have beaten yet

    expect((await releaseDeadWorkers(t.db.db)).sort()).toEqual(['pool-dead', 'pool-stale']);
    const after = await jobs([dead, stale, live, recent]);
    expect(after.get(dead)).toBeNull();
    expect(after.get(stale)).toBeNull();
    expect(after.get(live)).toBe('pool-live');
    expect(after.get(recent)).toBe('pool-new');
    const beats = await t.db.db.selectFrom('worker_heartbeats').select('worker_id').orderBy('worker_id').execute();
    expect(beats.map((b) => b.worker_id)).toEqual(['pool-live']);
    // A heartbeat left by a worker long gone that held no job is dropped too.
    await beat(t.db.db, 'pool-ancient');
    await t.db.db.updateTable('worker_heartbeats').set({ beat_at: sql`now() - interval '2 hours'` }).where('worker_id', '=', 'pool-ancient').execute();
    expect(await releaseDeadWorkers(t.db.db)).toEqual([]);
    expect((await t.db.db.selectFrom('worker_heartbeats').select('worker_id').execute()).map((b) => b.worker_id)).toEqual(['pool-live']);
  });

  it("deletes the dead worker's retired job rows (they can never run), not permanently failed ones", async () => {
    const old = DEAD_AFTER_SECONDS + 30;
    const retired = await lockedJob('pool-gone', old, { retired: true });
    const failed = await lockedJob('pool-gone', old, { failed: true });
    const pending = await lockedJob('pool-gone', old);
    expect(await releaseDeadWorkers(t.db.db)).toEqual(['pool-gone']);
    const after = await jobs([retired, failed, pending]);
    expect(after.has(retired)).toBe(false);
    expect(after.has(failed)).toBe(true);
    expect(after.get(pending)).toBeNull(); // released: a live worker runs it
  });
});
