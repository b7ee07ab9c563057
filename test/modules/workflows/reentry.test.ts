import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainEventQueue } from '../../../src/modules/workflows/engine/queue.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, executionsOf, track, waitForExecutions } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

describe('re-entry record (workflow_enrolments)', () => {
  it('a contact started by hand has entered: an event cannot enrol it again when re-entry is off', async () => {
    const { project: p } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, { eventName: 'joined', steps: [], edges: [] });
    await track(t.app, p, { email: 'other@x.example', event: 'warm-up' });
    const started = await t.app.inject({ method: 'POST', url: `/workflows/${wf.id}/executions`, headers: bearer(p.secret), payload: { email: 'other@x.example' } });
    expect(started.statusCode, started.body).toBe(201);
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    await track(t.app, p, { email: 'other@x.example', event: 'joined' });
    await drainEventQueue(t.db.db, p.id);
    expect((await executionsOf(t.db, wf.id)).length).toBe(1);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_enrolments WHERE workflow_id = ${wf.id}::uuid`.execute(t.db.db);
    expect(rows[0]?.n).toBe(1);
  });

  it('an entered contact of a workflow without re-entry costs a tracked event nothing: no queue row, no job', async () => {
    const { project: p } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, { eventName: 'visit', steps: [], edges: [] });
    const reentry = await createWorkflow(t.db, p.id, { eventName: 'visit', allowReentry: true, steps: [], edges: [] });
    const { contact } = await track(t.app, p, { email: 'back@x.example', event: 'visit' });
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    await waitForExecutions(t.db, reentry.id, 1, ['COMPLETED']);
    /** What the events trigger queues for one more `visit` of the contact, read before the commit (the worker cannot drain it first). */
    const queuedByNextVisit = () =>
      t.db.db.transaction().execute(async (trx) => {
        await sql`INSERT INTO events (project_id, contact_id, name, data) VALUES (${p.id}::uuid, ${contact}::uuid, 'visit', '{}')`.execute(trx);
        const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_event_queue WHERE project_id = ${p.id}::uuid`.execute(trx);
        return rows[0]?.n;
      });
    await sql`UPDATE workflows SET enabled = false WHERE id = ${reentry.id}::uuid`.execute(t.db.db);
    expect(await queuedByNextVisit()).toBe(0);
    // The re-entry workflow enabled again: the same contact's next event is queued and enrolled.
    await sql`UPDATE workflows SET enabled = true WHERE id = ${reentry.id}::uuid`.execute(t.db.db);
    expect(await queuedByNextVisit()).toBe(1);
    await waitForExecutions(t.db, reentry.id, 2, ['COMPLETED']);
    expect((await executionsOf(t.db, wf.id)).length).toBe(1);
  });

  it('6 batches of 1,000 new contacts each enrol all 1,000 (each rule a key probe as executions pile up)', async () => {
    const { project: p } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, { eventName: 'signup', steps: [{ key: 'hold', type: 'DELAY', config: { amount: 1, unit: 'days' } }], edges: [['trigger', 'hold']] });
    for (let round = 0; round < 6; round++) {
      await sql`
        WITH c AS (INSERT INTO contacts (project_id, email, subscribed)
                   SELECT ${p.id}::uuid, 'r' || ${round}::int || '-' || i || '@x.example', true FROM generate_series(1, 1000) i RETURNING id)
        INSERT INTO events (project_id, contact_id, name, data) SELECT ${p.id}::uuid, id, 'signup', '{}' FROM c`.execute(t.db.db);
      await drainEventQueue(t.db.db, p.id); // or the worker's job, whichever takes the queue first
      await waitForExecutions(t.db, wf.id, 1000 * (round + 1), ['WAITING']);
    }
  });
});
