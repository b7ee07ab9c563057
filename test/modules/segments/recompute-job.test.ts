import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Tasks } from '../../../src/jobs/queue.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { seedPeople } from '../../conditions/fixtures.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: {} });
});
afterAll(() => t.close());

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
  const entries = () =>
    t.db.db.selectFrom('events').select('contact_id').where('project_id', '=', project.id).where('name', '=', 'segment.buyers.entry').execute();
  for (let i = 0; i < 100 && (await entries()).length < 3; i++) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500));
  expect(await entries()).toHaveLength(3);
  const row = await t.db.db.selectFrom('segments').select(['member_count', 'computed_at']).where('id', '=', seg.id).executeTakeFirstOrThrow();
  expect(row.member_count).toBe(3);
  expect(row.computed_at).not.toBeNull();
});
