import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, enrolmentPending, executionsOf, queuedEvents, stepsOf, track, waitForExecutions, workflowJobs } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

const project = async (): Promise<TestProject> => (await newProject(t.app)).project;
const contactData = async (email: string) =>
  (await t.db.db.selectFrom('contacts').select(['data', 'subscribed']).where('email', '=', email).executeTakeFirstOrThrow());

describe('workflow engine: step types end to end', () => {
  it('CONDITION branches yes/no: UPDATE_CONTACT on yes then completes; EXIT with its reason on no', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'signed_up',
      steps: [
        { key: 'check', type: 'CONDITION', config: { field: 'data.plan', operator: 'equals', value: 'pro' } },
        { key: 'tag', type: 'UPDATE_CONTACT', config: { updates: { tier: 'gold', plan: null } } },
        { key: 'bye', type: 'EXIT', config: { reason: 'not pro' } },
      ],
      edges: [['trigger', 'check'], ['check', 'tag', 'yes'], ['check', 'bye', 'no']],
    });
    await track(t.app, p, { email: 'pro@x.example', event: 'signed_up', data: { plan: 'pro' } });
    await track(t.app, p, { email: 'free@x.example', event: 'signed_up', data: { plan: 'free' } });
    const rows = await waitForExecutions(t.db, wf.id, 2, ['COMPLETED', 'EXITED']);
    const byStatus = Object.fromEntries(rows.map((r) => [r.status, r]));
    expect(byStatus.EXITED?.exit_reason).toBe('not pro');
    expect(byStatus.COMPLETED?.completed_at).not.toBeNull();
    expect((await stepsOf(t.db, byStatus.COMPLETED?.id ?? '')).map((s) => [s.key, s.status, s.branch])).toEqual([
      ['trigger', 'COMPLETED', null],
      ['check', 'COMPLETED', 'yes'],
      ['tag', 'COMPLETED', null],
    ]);
    expect((await stepsOf(t.db, byStatus.EXITED?.id ?? '')).map((s) => [s.key, s.status, s.branch])).toEqual([
      ['trigger', 'COMPLETED', null],
      ['check', 'COMPLETED', 'no'],
      ['bye', 'COMPLETED', null],
    ]);
    expect((await contactData('pro@x.example')).data).toEqual({ tier: 'gold' });
    expect((await contactData('free@x.example')).data).toEqual({ plan: 'free' });
    // The trigger's data is the execution's `event`.
    expect(byStatus.COMPLETED?.event).toEqual({ plan: 'pro' });
  });

  it('CONDITION reads event.<key> and context.<key> of the execution (one compile per execution)', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'ordered',
      steps: [
        { key: 'big', type: 'CONDITION', config: { field: 'event.total', operator: 'greaterThan', value: 100 } },
        { key: 'vip', type: 'UPDATE_CONTACT', config: { updates: { vip: true } } },
      ],
      edges: [['trigger', 'big'], ['big', 'vip', 'yes']],
    });
    await track(t.app, p, { email: 'big@x.example', event: 'ordered', data: { total: 250 } });
    await track(t.app, p, { email: 'small@x.example', event: 'ordered', data: { total: 20 } });
    const rows = await waitForExecutions(t.db, wf.id, 2, ['COMPLETED']);
    expect((await contactData('big@x.example')).data).toMatchObject({ vip: true });
    expect((await contactData('small@x.example')).data).not.toHaveProperty('vip');
    // No edge for "no": the execution completes at the condition.
    const small = rows.find((r) => (r.event as { total?: number }).total === 20);
    expect((await stepsOf(t.db, small?.id ?? '')).map((s) => [s.key, s.branch])).toEqual([['trigger', null], ['big', 'no']]);
  });

  it('DELAY waits (execution and step WAITING with due_at) and then continues; UPDATE_CONTACT unsubscribes (recorded as contact.unsubscribed)', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'trial_started',
      steps: [
        { key: 'wait', type: 'DELAY', config: { amount: 0.03, unit: 'minutes' } },
        { key: 'unsub', type: 'UPDATE_CONTACT', config: { subscribed: false } },
      ],
      edges: [['trigger', 'wait'], ['wait', 'unsub']],
    });
    const started = Date.now();
    await track(t.app, p, { email: 'delay@x.example', event: 'trial_started' });
    const [waiting] = await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    const steps = await stepsOf(t.db, waiting?.id ?? '');
    expect(steps.map((s) => [s.key, s.status])).toEqual([['trigger', 'COMPLETED'], ['wait', 'WAITING']]);
    const due = await t.db.db.selectFrom('workflow_step_executions').select('due_at').where('id', '=', steps[1]?.id ?? '').executeTakeFirstOrThrow();
    expect(due.due_at?.getTime()).toBeGreaterThan(started + 1000);
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1700);
    expect((await contactData('delay@x.example')).subscribed).toBe(false);
    const events = await t.db.db.selectFrom('events').select('name').where('project_id', '=', p.id).where('name', '=', 'contact.unsubscribed').execute();
    expect(events).toHaveLength(1);
  });

  it('a workflow whose trigger leads nowhere completes at once; an event no workflow cares about enqueues no job', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, { eventName: 'lonely', steps: [], edges: [] });
    await track(t.app, p, { email: 'lonely@x.example', event: 'lonely' });
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    await until('the first event handled', async () => (await enrolmentPending(t.db, p.id)).jobs === 0);
    const { event } = await track(t.app, p, { email: 'lonely@x.example', event: 'nobody_listens' });
    // The queue row and the job would have been written in the event's own transaction, which has committed.
    expect(await queuedEvents(t.db, [event])).toEqual([]);
    expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 0, jobs: 0 });
  });
});

describe('workflow engine: enrolment rules', () => {
  it('allowReentry false: one execution per contact ever; true: again once the first has finished, never two active', async () => {
    const p = await project();
    const once = await createWorkflow(t.db, p.id, { eventName: 'visit', steps: [], edges: [] });
    await track(t.app, p, { email: 'r@x.example', event: 'visit' });
    await waitForExecutions(t.db, once.id, 1, ['COMPLETED']);
    await track(t.app, p, { email: 'r@x.example', event: 'visit' });
    // Both events' jobs have run once no workflow job is left.
    await until('no workflow job', async () => (await workflowJobs(t.db)).length === 0);
    expect(await executionsOf(t.db, once.id)).toHaveLength(1);

    const again = await createWorkflow(t.db, p.id, {
      eventName: 'login',
      allowReentry: true,
      steps: [{ key: 'hold', type: 'DELAY', config: { amount: 0.02, unit: 'minutes' } }],
      edges: [['trigger', 'hold']],
    });
    await track(t.app, p, { email: 'r@x.example', event: 'login' });
    await waitForExecutions(t.db, again.id, 1, ['WAITING']);
    await track(t.app, p, { email: 'r@x.example', event: 'login' }); // while active: not enrolled
    await until('the second event handled', async () => {
      const pending = await enrolmentPending(t.db, p.id);
      return pending.queued === 0 && pending.jobs === 0;
    });
    await waitForExecutions(t.db, again.id, 1, ['COMPLETED']);
    await track(t.app, p, { email: 'r@x.example', event: 'login' });
    await waitForExecutions(t.db, again.id, 2, ['COMPLETED']);
  });

  it('at most one execution per (workflow, source event): the workflow-events job run twice on the same ids', async () => {
    const p = await project();
    const { handleWorkflowEvents } = await import('../../../src/modules/workflows/index.js');
    const wf = await createWorkflow(t.db, p.id, { eventName: 'dup', allowReentry: true, steps: [], edges: [] });
    let ids: string[] = [];
    await t.withWorkerStopped(async () => {
      await track(t.app, p, { email: 'd1@x.example', event: 'dup' });
      await track(t.app, p, { email: 'd2@x.example', event: 'dup' });
      ids = (await t.db.db.selectFrom('events').select('id').where('project_id', '=', p.id).where('name', '=', 'dup').execute()).map((e) => e.id);
      const first = await handleWorkflowEvents(t.db.db, ids);
      const second = await handleWorkflowEvents(t.db.db, ids);
      const concurrent = await Promise.all([handleWorkflowEvents(t.db.db, ids), handleWorkflowEvents(t.db.db, ids)]);
      expect([first.enrolled, second.enrolled, ...concurrent.map((c) => c.enrolled)]).toEqual([2, 0, 0, 0]);
    });
    // The queued jobs of the same events then run too: still two.
    await until('no workflow job', async () => (await workflowJobs(t.db)).length === 0);
    const rows = await waitForExecutions(t.db, wf.id, 2, ['COMPLETED']);
    expect(new Set(rows.map((r) => r.trigger_event_id))).toEqual(new Set(ids));
  });

  it('a disabled workflow enrols nobody (no job at all) but lets a running execution finish', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'started',
      steps: [{ key: 'hold', type: 'DELAY', config: { amount: 0.02, unit: 'minutes' } }, { key: 'mark', type: 'UPDATE_CONTACT', config: { updates: { done: true } } }],
      edges: [['trigger', 'hold'], ['hold', 'mark']],
    });
    await track(t.app, p, { email: 'running@x.example', event: 'started' });
    await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    await until('the first event handled', async () => (await enrolmentPending(t.db, p.id)).jobs === 0);
    await t.db.db.updateTable('workflows').set({ enabled: false }).where('id', '=', wf.id).execute();
    const { event } = await track(t.app, p, { email: 'late@x.example', event: 'started' });
    expect(await queuedEvents(t.db, [event])).toEqual([]);
    expect(await enrolmentPending(t.db, p.id)).toEqual({ queued: 0, jobs: 0 });
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    expect((await contactData('running@x.example')).data).toEqual({ done: true });
  });

  it('a disabled project: the next step job cancels the execution', async () => {
    const p = await project();
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'go',
      steps: [{ key: 'hold', type: 'DELAY', config: { amount: 0.02, unit: 'minutes' } }, { key: 'mark', type: 'UPDATE_CONTACT', config: { updates: { done: true } } }],
      edges: [['trigger', 'hold'], ['hold', 'mark']],
    });
    await track(t.app, p, { email: 'pd@x.example', event: 'go' });
    await waitForExecutions(t.db, wf.id, 1, ['WAITING']);
    await sql`UPDATE projects SET disabled = true WHERE id = ${p.id}::uuid`.execute(t.db.db);
    const [row] = await waitForExecutions(t.db, wf.id, 1, ['CANCELLED']);
    expect((await stepsOf(t.db, row?.id ?? '')).map((s) => [s.key, s.status])).toEqual([['trigger', 'COMPLETED'], ['hold', 'SKIPPED']]);
    expect((await contactData('pd@x.example')).data).toEqual({});
  });

  it('enrols from the subscription trigger (contact.subscribed), a segment entry and email.open', async () => {
    const p = await project();
    const sub = await createWorkflow(t.db, p.id, { eventName: 'contact.subscribed', steps: [], edges: [] });
    const opened = await createWorkflow(t.db, p.id, { eventName: 'email.open', steps: [], edges: [] });
    const seg = await createWorkflow(t.db, p.id, { eventName: 'segment.vip-users.entry', steps: [], edges: [] });
    await track(t.app, p, { email: 's@x.example', event: 'x', subscribed: false });
    await track(t.app, p, { email: 's@x.example', event: 'x', subscribed: true });
    await waitForExecutions(t.db, sub.id, 1, ['COMPLETED']);

    const contact = await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', p.id).where('email', '=', 's@x.example').executeTakeFirstOrThrow();
    await t.db.db.insertInto('events').values({ project_id: p.id, contact_id: contact.id, name: 'email.open', data: JSON.stringify({ emailId: 'e1' }) }).execute();
    const [o] = await waitForExecutions(t.db, opened.id, 1, ['COMPLETED']);
    expect(o?.event).toEqual({ emailId: 'e1' });

    await track(t.app, p, { email: 'vip@x.example', event: 'x', data: { plan: 'vip' } });
    const res = await t.app.inject({
      method: 'POST',
      url: '/segments',
      headers: { authorization: `Bearer ${p.secret}` },
      payload: { name: 'VIP Users', type: 'DYNAMIC', trackMembership: true, condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'vip' }] }] } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const compute = await t.app.inject({ method: 'POST', url: `/segments/${res.json<{ id: string }>().id}/compute`, headers: { authorization: `Bearer ${p.secret}` } });
    expect(compute.statusCode, compute.body).toBe(200);
    const [s] = await waitForExecutions(t.db, seg.id, 1, ['COMPLETED']);
    expect(s?.event).toMatchObject({ segmentName: 'VIP Users' });
  });
});
