import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => t?.close());

describe('a step edited while the engine moves an execution onto it', () => {
  it('DELETE waits for the engine transaction inserting a visit of the step, then refuses with 409 (the visit is not cascaded away)', async () => {
    const { project: p } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, { eventName: 'go', enabled: false, steps: [{ key: 'mark', type: 'UPDATE_CONTACT', config: { updates: { done: true } } }], edges: [['trigger', 'mark']] });
    const contact = await t.db.db.insertInto('contacts').values({ project_id: p.id, email: 'race@x.example', subscribed: true }).returning('id').executeTakeFirstOrThrow();
    const mark = wf.steps.mark ?? '';

    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const x = await t.db.db
      .insertInto('workflow_executions')
      .values({ project_id: p.id, workflow_id: wf.id, contact_id: contact.id, current_step_id: wf.steps.trigger ?? null, event: '{}', context: '{}' })
      .returning('id')
      .executeTakeFirstOrThrow();
    // The engine's advance (advance.ts): the execution moves to `mark` and its visit is inserted, not yet committed.
    const engine = t.db.db.transaction().execute(async (trx) => {
      await trx.updateTable('workflow_executions').set({ current_step_id: mark }).where('id', '=', x.id).execute();
      await trx.insertInto('workflow_step_executions').values({ project_id: p.id, execution_id: x.id, workflow_id: wf.id, step_id: mark }).execute();
      await released;
    });
    await until('the engine transaction holds the step', async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'workflow_step_executions' AND l.granted`.execute(t.db.db);
      return (rows[0]?.n ?? 0) > 0;
    });
    const del = t.app.inject({ method: 'DELETE', url: `/workflows/${wf.id}/steps/${mark}`, headers: bearer(p.secret) });
    // The DELETE now waits on the step row's lock; release the engine's commit.
    await until('the DELETE waits for a lock', async () => {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`.execute(t.db.db);
      return (rows[0]?.n ?? 0) > 0;
    });
    release();
    await engine;
    const res = await del;
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().error.details).toEqual({ waitingExecutions: 1 });
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_step_executions WHERE step_id = ${mark}::uuid`.execute(t.db.db);
    expect(rows[0]?.n).toBe(1);
  });
});
