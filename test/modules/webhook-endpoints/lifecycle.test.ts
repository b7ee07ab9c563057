import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidV7 } from '../../../src/lib/uuid.js';
import { deleteOldDeliveries, wakeStrandedEndpoints } from '../../../src/modules/webhook-endpoints/index.js';
import { newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { seedContacts } from '../campaigns/helpers.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { deliveriesOf, registerEndpoint } from './helpers.js';

/**
 * What becomes of endpoints and deliveries around them: a project reset keeps the endpoints
 * and removes their deliveries and queued jobs, a deletion leaves nothing behind, the log's retention, the sweep. No worker runs on this
 * file's database, so the jobs the capture queues stay visible.
 */

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(() => t?.close());

const HOOK_URL = 'http://127.0.0.1:9/hook';

async function unsubscribeEvents(projectId: string, n = 1): Promise<void> {
  const contacts = await seedContacts(t.db, projectId, n, { tag: randomUUID().slice(0, 8) });
  await t.db.db.updateTable('contacts').set({ subscribed: false }).where('id', 'in', contacts.map((c) => c.id)).execute();
}

/** The queued webhook-deliver jobs of a project. */
async function jobsOf(projectId: string): Promise<{ key: string | null; run_at: Date }[]> {
  const { rows } = await sql<{ key: string | null; run_at: Date }>`
    SELECT j.key, j.run_at FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks k ON k.id = j.task_id
    WHERE k.identifier = 'webhook-deliver' AND j.payload ->> 'projectId' = ${projectId}`.execute(t.db.db);
  return rows;
}

async function projectWithDeliveries(): Promise<{ user: SignedInUser; project: TestProject; endpointId: string }> {
  const { user, project } = await newProject(t.app);
  const e = await registerEndpoint(t.app, project, HOOK_URL, ['contact.unsubscribed']);
  await unsubscribeEvents(project.id, 3);
  return { user, project, endpointId: e.id };
}

const leftOf = async (projectId: string) => ({
  endpoints: (await t.db.db.selectFrom('webhook_endpoints').select('id').where('project_id', '=', projectId).execute()).length,
  deliveries: (await t.db.db.selectFrom('webhook_deliveries').select('id').where('project_id', '=', projectId).execute()).length,
  jobs: (await jobsOf(projectId)).length,
});

describe('capture', () => {
  it('queues one wake job per endpoint for a statement of many events, keyed by the endpoint', async () => {
    const { project, endpointId } = await projectWithDeliveries();
    expect(await deliveriesOf(t.db, endpointId)).toHaveLength(3);
    const jobs = await jobsOf(project.id);
    expect(jobs).toEqual([{ key: `webhook-deliver:${endpointId}`, run_at: expect.any(Date) }]);
    // More events later join the pending job instead of adding one.
    await unsubscribeEvents(project.id, 2);
    expect(await jobsOf(project.id)).toHaveLength(1);
    expect(await deliveriesOf(t.db, endpointId)).toHaveLength(5);
  });
});

describe('project reset and deletion', () => {
  it('a reset keeps the endpoints (settings) but removes their deliveries and queued jobs; another project keeps its own', async () => {
    const a = await projectWithDeliveries();
    const b = await projectWithDeliveries();
    expect(await leftOf(a.project.id)).toEqual({ endpoints: 1, deliveries: 3, jobs: 1 });
    const res = await t.app.inject({ method: 'POST', url: `/users/@me/projects/${a.project.id}/reset`, headers: { cookie: a.user.cookie }, payload: { confirm: a.project.name } });
    expect(res.statusCode, res.body).toBe(200);
    expect(await leftOf(a.project.id)).toEqual({ endpoints: 1, deliveries: 0, jobs: 0 });
    // The kept endpoint goes on capturing.
    await unsubscribeEvents(a.project.id, 1);
    expect(await leftOf(a.project.id)).toEqual({ endpoints: 1, deliveries: 1, jobs: 1 });
    expect(await leftOf(b.project.id)).toEqual({ endpoints: 1, deliveries: 3, jobs: 1 });
  });

  it('a deletion leaves nothing of them behind', async () => {
    const a = await projectWithDeliveries();
    const res = await t.app.inject({ method: 'DELETE', url: `/users/@me/projects/${a.project.id}`, headers: { cookie: a.user.cookie }, payload: { confirm: a.project.name } });
    expect(res.statusCode, res.body).toBe(204);
    expect(await leftOf(a.project.id)).toEqual({ endpoints: 0, deliveries: 0, jobs: 0 });
  });
});

describe('maintenance jobs', () => {
  it('retention deletes finished deliveries older than its window, keeps recent and PENDING ones, gives up PENDING ones older than 25 hours', async () => {
    const { project } = await newProject(t.app);
    const e = await registerEndpoint(t.app, project, HOOK_URL, ['contact.unsubscribed']);
    const day = 24 * 60 * 60 * 1000;
    const row = (ageMs: number, status: 'PENDING' | 'DELIVERED' | 'FAILED') => ({
      project_id: project.id,
      id: uuidV7(Date.now() - ageMs),
      endpoint_id: e.id,
      event_id: randomUUID(),
      event_type: 'contact.unsubscribed',
      event_at: new Date(Date.now() - ageMs),
      data: '{}',
      status,
      created_at: new Date(Date.now() - ageMs),
    });
    const oldDelivered = row(8 * day, 'DELIVERED');
    const oldFailed = row(8 * day, 'FAILED');
    const recent = row(6 * day, 'DELIVERED');
    const stalePending = row(2 * day, 'PENDING');
    const freshPending = row(1000, 'PENDING');
    await t.db.db.insertInto('webhook_deliveries').values([oldDelivered, oldFailed, recent, stalePending, freshPending]).execute();
    const deleted = await deleteOldDeliveries(t.db.db, new Date(Date.now() - 7 * day), 1);
    expect(deleted).toBeGreaterThanOrEqual(2);
    const left = await deliveriesOf(t.db, e.id);
    expect(left.map((d) => d.id).sort()).toEqual([recent.id, stalePending.id, freshPending.id].sort());
    expect(left.find((d) => d.id === stalePending.id)).toMatchObject({ status: 'FAILED', error: 'given up: not delivered within 24 hours' });
    expect(left.find((d) => d.id === freshPending.id)?.status).toBe('PENDING');
  });

  it('the sweep wakes an endpoint whose due delivery has no deliverer, not one whose lease is held or that is disabled', async () => {
    const { project } = await newProject(t.app);
    const e = await registerEndpoint(t.app, project, HOOK_URL, ['contact.unsubscribed']);
    await unsubscribeEvents(project.id);
    await sql`DELETE FROM graphile_worker._private_jobs WHERE key = ${`webhook-deliver:${e.id}`}`.execute(t.db.db);
    await sql`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '5 minutes' WHERE endpoint_id = ${e.id}`.execute(t.db.db);
    await sql`UPDATE webhook_endpoints SET lease_until = now() + interval '1 minute' WHERE id = ${e.id}`.execute(t.db.db);
    await wakeStrandedEndpoints(t.db.db);
    expect(await jobsOf(project.id)).toEqual([]);
    await sql`UPDATE webhook_endpoints SET lease_until = now() - interval '1 second' WHERE id = ${e.id}`.execute(t.db.db);
    await wakeStrandedEndpoints(t.db.db);
    expect(await jobsOf(project.id)).toEqual([{ key: `webhook-deliver:${e.id}`, run_at: expect.any(Date) }]);
  });
});
