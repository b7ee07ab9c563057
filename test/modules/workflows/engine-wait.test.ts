import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { drainWorkflowEventQueue, handleWorkflowEvents, runWorkflowStepBatch } from '../../../src/modules/workflows/index.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, enrolmentPending, executionsOf, stepsOf, track, waitForExecutions, workflowJobs } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

const project = async (): Promise<TestProject> => (await newProject(t.app)).project;

const waitFlow = (timeout?: number) => ({
  eventName: 'cart',
  allowReentry: true,
  steps: [
    { key: 'wait', type: 'WAIT_FOR_EVENT' as const, config: { eventName: 'paid', ...(timeout !== undefined && { timeout }) } },
    { key: 'thanks', type: 'UPDATE_CONTACT' as const, config: { updates: { paid: true } } },
    { key: 'nudge', type: 'EXIT' as const, config: { reason: 'never paid' } },
  ],
  edges: [['trigger', 'wait'], ['wait', 'thanks', 'event'], ['wait', 'nudge', 'timeout']] as [string, string, ('event' | 'timeout')?][],
});

describe('WAIT_FOR_EVENT', () => {
  it('resumes on the awaited event of the same contact (its data merged into `event`), not on an earlier one or another contact', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, waitFlow(3600));
    await track(t.app, p, { email: 'early@x.example', event: 'paid' }); // before the wait: never counts
    await track(t.app, p, { email: 'early@x.example', event: 'cart', data: { cartId: 'c1' } });
    await track(t.app, p, { email: 'other@x.example', event: 'cart' });
    const rows = await waitForExecutions(t.db, wf.id, 2, ['WAITING']);
    expect(rows.every((r) => r.wait_event === 'paid' && r.wait_since !== null)).toBe(true);
    await track(t.app, p, { email: 'early@x.example', event: 'paid', data: { amount: 30 } });
    await until('the paid execution completed', async () => (await executionsOf(t.db, wf.id)).some((x) => x.status === 'COMPLETED'));
    const after = await executionsOf(t.db, wf.id);
    const done = after.find((x) => x.status === 'COMPLETED');
    expect(done?.event).toEqual({ cartId: 'c1', amount: 30 });
    expect((await stepsOf(t.db, done?.id ?? '')).map((s) => [s.key, s.status, s.branch])).toEqual([
      ['trigger', 'COMPLETED', null],
      ['wait', 'COMPLETED', 'event'],
      ['thanks', 'COMPLETED', null],
    ]);
    expect(after.find((x) => x.id !== done?.id)?.status).toBe('WAITING');
  });

  it('times out along the timeout branch; without a timeout branch a timed-out wait completes the execution', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, waitFlow(1));
    await track(t.app, p, { email: 'slow@x.example', event: 'cart' });
    const [x] = await waitForExecutions(t.db, wf.id, 1, ['EXITED']);
    expect(x?.exit_reason).toBe('never paid');
    expect((await stepsOf(t.db, x?.id ?? '')).map((s) => [s.key, s.branch])).toEqual([['trigger', null], ['wait', 'timeout'], ['nudge', null]]);

    const bare = await createWorkflow(t.db, p.id, { ...waitFlow(1), eventName: 'cart2', edges: [['trigger', 'wait'], ['wait', 'thanks', 'event']] });
    await track(t.app, p, { email: 'slow@x.example', event: 'cart2' });
    const [y] = await waitForExecutions(t.db, bare.id, 1, ['COMPLETED']);
    expect((await stepsOf(t.db, y?.id ?? '')).map((s) => [s.key, s.branch])).toEqual([['trigger', null], ['wait', 'timeout']]);
  });

  it('resume vs timeout race, both forced to run at once: exactly one branch per execution', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, waitFlow(3600));
    const n = 12;
    for (let i = 0; i < n; i++) await track(t.app, p, { email: `race${i}@x.example`, event: 'cart' });
    const rows = await waitForExecutions(t.db, wf.id, n, ['WAITING']);
    await t.withWorkerStopped(async () => {
      // Every wait due now, and every contact's awaited event recorded in one statement.
      await sql`UPDATE workflow_step_executions SET due_at = now() - interval '1 second' WHERE workflow_id = ${wf.id}::uuid AND status = 'WAITING'`.execute(t.db.db);
      await sql`INSERT INTO events (project_id, contact_id, name) SELECT project_id, contact_id, 'paid' FROM workflow_executions WHERE workflow_id = ${wf.id}::uuid`.execute(t.db.db);
      const eventIds = (await t.db.db.selectFrom('events').select('id').where('project_id', '=', p.id).where('name', '=', 'paid').execute()).map((e) => e.id);
      const waits = await sql<{ id: string }>`SELECT id FROM workflow_step_executions WHERE workflow_id = ${wf.id}::uuid AND status = 'WAITING'`.execute(t.db.db);
      const ids = waits.rows.map((r) => r.id);
      // The queue's drain (what the trigger's job runs) and a run on the ids (a job queued before migration 0018).
      await Promise.all([
        drainWorkflowEventQueue(t.db.db, p.id),
        ...ids.map((id) => runWorkflowStepBatch(t.deps, p.id, [id])),
        handleWorkflowEvents(t.db.db, eventIds),
      ]);
    });
    const done = await waitForExecutions(t.db, wf.id, n, ['COMPLETED', 'EXITED']);
    for (const x of done) {
      const steps = await stepsOf(t.db, x.id);
      expect(steps.map((s) => s.key)).toEqual(['trigger', 'wait', x.status === 'COMPLETED' ? 'thanks' : 'nudge']);
      expect(steps[1]?.branch).toBe(x.status === 'COMPLETED' ? 'event' : 'timeout');
    }
    expect(rows).toHaveLength(n);
  });

  it('resumes many executions from one event batch with one job and one set-based pass', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, waitFlow());
    const n = 40;
    for (let i = 0; i < n; i++) await track(t.app, p, { email: `bulk${i}@x.example`, event: 'cart' });
    // What the minute's sweep does (no cron here): an event stranded by the job-key race of
    // docs/workflows.md "Engine" (seen once in 40 tracks on a slow machine) is drained now.
    await drainWorkflowEventQueue(t.db.db, p.id);
    await waitForExecutions(t.db, wf.id, n, ['WAITING']);
    let jobs: Awaited<ReturnType<typeof workflowJobs>> = [];
    await t.withWorkerStopped(async () => {
      await sql`INSERT INTO events (project_id, contact_id, name, data) SELECT project_id, contact_id, 'paid', '{"via":"batch"}' FROM workflow_executions WHERE workflow_id = ${wf.id}::uuid`.execute(t.db.db);
      jobs = (await workflowJobs(t.db)).filter((j) => j.task === 'workflow-events');
      expect(jobs).toHaveLength(1);
      expect(jobs[0]?.payload).toEqual({ projectId: p.id });
      expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: n, jobs: 1 });
      const { resumed, chunks } = await drainWorkflowEventQueue(t.db.db, p.id);
      expect([resumed, chunks]).toEqual([n, 1]);
    });
    const rows = await waitForExecutions(t.db, wf.id, n, ['COMPLETED']);
    expect(rows.every((r) => (r.event as { via?: string }).via === 'batch')).toBe(true);
  });

  it('an event committed while the wait was being entered is found by the wait’s recheck', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, waitFlow(3600));
    await track(t.app, p, { email: 'late@x.example', event: 'cart' });
    const [x] = await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    await t.withWorkerStopped(async () => {
      // The event lands without its job (as if its trigger query ran before the wait committed).
      await sql`ALTER TABLE events DISABLE TRIGGER events_workflow_enrolment`.execute(t.db.db);
      try {
        await sql`INSERT INTO events (project_id, contact_id, name) VALUES (${p.id}::uuid, ${x?.contact_id ?? ''}::uuid, 'paid')`.execute(t.db.db);
      } finally {
        await sql`ALTER TABLE events ENABLE TRIGGER events_workflow_enrolment`.execute(t.db.db);
      }
      const [wait] = (await stepsOf(t.db, x?.id ?? '')).filter((s) => s.key === 'wait');
      await runWorkflowStepBatch(t.deps, p.id, [wait?.id ?? '']);
    });
    const [done] = await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    expect((await stepsOf(t.db, done?.id ?? '')).map((s) => s.branch)).toEqual([null, 'event', null]);
  });
});
