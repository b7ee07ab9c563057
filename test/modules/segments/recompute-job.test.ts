import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Tasks } from '../../../src/jobs/queue.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { seedPeople } from '../../conditions/fixtures.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';

// Own database: the cron fan-out computes every tracked segment of the database it runs on,
// which on the shared one would include other files' segments (and record their events).
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
});

/** segments-recompute jobs not finished yet (graphile-worker deletes a job once it succeeds). */
async function pendingRecomputes(): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks k ON k.id = j.task_id
    WHERE k.identifier = ${Tasks.segmentsRecompute}`.execute(t.db.db);
  return rows[0]?.n ?? 0;
}

it('the cron task fans out one job per tracked segment, which records entry events once', async () => {
  const { project } = await newProject(t.app);
  await seedPeople(t.db, project.id);
  const res = await t.app.inject({
    method: 'POST',
    url: '/segments',
    headers: bearer(project.secret),
    payload: { name: 'Buyers', trackMembership: true, condition: { logic: 'AND', groups: [{ filters: [{ field: 'event.purchase', operator: 'triggered' }] }] } },
  });
  const seg = res.json<{ id: string }>();
  await sql`SELECT graphile_worker.add_job(${Tasks.segmentsRecompute})`.execute(t.db.db);
  await sql`SELECT graphile_worker.add_job(${Tasks.segmentsRecompute})`.execute(t.db.db);
  // Both fan-outs and every job they enqueued have run once no recompute job is left.
  const deadline = Date.now() + 15_000;
  while ((await pendingRecomputes()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(await pendingRecomputes()).toBe(0);
  const entries = await t.db.db.selectFrom('events').select('contact_id').where('project_id', '=', project.id).where('name', '=', 'segment.buyers.entry').execute();
  expect(entries).toHaveLength(3);
  const row = await t.db.db.selectFrom('segments').select(['member_count', 'computed_at']).where('id', '=', seg.id).executeTakeFirstOrThrow();
  expect(row.member_count).toBe(3);
  expect(row.computed_at).not.toBeNull();
});
