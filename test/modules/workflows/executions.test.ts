import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, newSender, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { createWorkflow, executionsOf, stepsOf, track, waitForExecutions, workflowJobs } from './engine-helpers.js';

let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
});
afterAll(async () => t?.close());

const api = (p: TestProject, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });

const delayFlow = (minutes = 10) => ({
  eventName: 'manual',
  steps: [{ key: 'hold', type: 'DELAY' as const, config: { amount: minutes, unit: 'minutes' } }],
  edges: [['trigger', 'hold']] as [string, string][],
});

describe('executions API', () => {
  it('manual start: 201 with context; 409 while active; 409 again without re-entry; 400 disabled; 404 unknown contact, workflow or another project', async () => {
    const { project: p } = await newProject(t.app);
    const { project: other } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, delayFlow(0.01));
    const { contact } = await track(t.app, p, { email: 'm@x.example', event: 'seen' });
    const res = await api(p, 'POST', `/workflows/${wf.id}/executions`, { contactId: contact, context: { coupon: 'C1' } });
    expect(res.statusCode, res.body).toBe(201);
    const started = res.json<{ id: string; status: string; context: object; contact: { email: string } }>();
    expect(started).toMatchObject({ status: 'RUNNING', context: { coupon: 'C1' }, contact: { email: 'm@x.example' } });
    expect((await api(p, 'POST', `/workflows/${wf.id}/executions`, { email: 'M@x.example' })).statusCode).toBe(409);
    await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    expect((await api(p, 'POST', `/workflows/${wf.id}/executions`, { contactId: contact })).statusCode).toBe(409);
    expect((await api(p, 'POST', `/workflows/${wf.id}/executions`, { email: 'nobody@x.example' })).statusCode).toBe(404);
    expect((await api(p, 'POST', `/workflows/${wf.id}/executions`, { contactId: 'nope' })).statusCode).toBe(404);
    expect((await api(other, 'POST', `/workflows/${wf.id}/executions`, { contactId: contact })).statusCode).toBe(404);
    expect((await api(p, 'POST', `/workflows/not-a-uuid/executions`, { contactId: contact })).statusCode).toBe(404);
    expect((await api(p, 'POST', `/workflows/${wf.id}/executions`, {})).statusCode).toBe(422);
    const off = await createWorkflow(t.db, p.id, { ...delayFlow(), enabled: false });
    expect((await api(p, 'POST', `/workflows/${off.id}/executions`, { contactId: contact })).statusCode).toBe(400);
  });

  it('list (status filter, 400 on an unknown one), get with the step timeline, cancel (200, then 409), isolation', async () => {
    const { project: p } = await newProject(t.app);
    const { project: other } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, { ...delayFlow(), allowReentry: true });
    for (const email of ['a@x.example', 'b@x.example', 'c@x.example']) await track(t.app, p, { email, event: 'manual' });
    await waitForExecutions(t.db, wf.id, 3, ['WAITING']);
    const list = await api(p, 'GET', `/workflows/${wf.id}/executions?status=WAITING&pageSize=2`);
    expect(list.statusCode, list.body).toBe(200);
    const page = list.json<{ data: { id: string; status: string; contact: { email: string } }[]; total: number; totalPages: number }>();
    expect(page).toMatchObject({ total: 3, totalPages: 2 });
    expect(page.data).toHaveLength(2);
    expect((await api(p, 'GET', `/workflows/${wf.id}/executions?status=DONE`)).statusCode).toBe(400);
    expect((await api(p, 'GET', `/workflows/${wf.id}/executions?status=COMPLETED`)).json<{ total: number }>().total).toBe(0);

    const id = page.data[0]?.id ?? '';
    const one = await api(p, 'GET', `/workflows/${wf.id}/executions/${id}`);
    expect(one.statusCode, one.body).toBe(200);
    const detail = one.json<{ steps: { stepType: string; status: string; dueAt: string | null }[] }>();
    expect(detail.steps.map((s) => [s.stepType, s.status])).toEqual([['TRIGGER', 'COMPLETED'], ['DELAY', 'WAITING']]);
    expect(detail.steps[1]?.dueAt).not.toBeNull();
    expect((await api(other, 'GET', `/workflows/${wf.id}/executions/${id}`)).statusCode).toBe(404);
    expect((await api(other, 'DELETE', `/workflows/${wf.id}/executions/${id}`)).statusCode).toBe(404);
    expect((await api(p, 'GET', `/workflows/${wf.id}/executions/xyz`)).statusCode).toBe(404);

    const cancelled = await api(p, 'DELETE', `/workflows/${wf.id}/executions/${id}`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json<{ status: string }>().status).toBe('CANCELLED');
    expect((await stepsOf(t.db, id)).map((s) => s.status)).toEqual(['COMPLETED', 'SKIPPED']);
    expect((await api(p, 'DELETE', `/workflows/${wf.id}/executions/${id}`)).statusCode).toBe(409);

    expect((await api(other, 'POST', `/workflows/${wf.id}/executions/cancel-all`)).statusCode).toBe(404);
    const all = await api(p, 'POST', `/workflows/${wf.id}/executions/cancel-all`);
    expect(all.statusCode, all.body).toBe(200);
    expect(all.json()).toEqual({ cancelled: 2 });
    expect((await executionsOf(t.db, wf.id)).map((x) => x.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED']);
  });

  it('cancel while a step job is queued: the job runs later and does nothing', async () => {
    const { project: p } = await newProject(t.app);
    const { runWorkflowStepBatch } = await import('../../../src/modules/workflows/index.js');
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'queued',
      steps: [{ key: 'mark', type: 'UPDATE_CONTACT', config: { updates: { touched: true } } }],
      edges: [['trigger', 'mark']],
    });
    const { contact } = await track(t.app, p, { email: 'q@x.example', event: 'seen' });
    let stepIds: string[] = [];
    await t.withWorkerStopped(async () => {
      const res = await api(p, 'POST', `/workflows/${wf.id}/executions`, { contactId: contact });
      expect(res.statusCode, res.body).toBe(201);
      const id = res.json<{ id: string }>().id;
      const [job] = await workflowJobs(t.db, (await stepsOf(t.db, id))[1]?.id);
      stepIds = (job?.payload as { ids: string[] }).ids;
      expect((await api(p, 'DELETE', `/workflows/${wf.id}/executions/${id}`)).statusCode).toBe(200);
      // The queued job of that one step, run as the worker would: nothing happens.
      await runWorkflowStepBatch(t.deps, p.id, stepIds);
    });
    const [x] = await executionsOf(t.db, wf.id);
    expect(x?.status).toBe('CANCELLED');
    expect((await stepsOf(t.db, x?.id ?? '')).map((s) => [s.key, s.status])).toEqual([['trigger', 'COMPLETED'], ['mark', 'SKIPPED']]);
    await until('no workflow job left', async () => (await workflowJobs(t.db, stepIds[0])).length === 0);
    const c = await t.db.db.selectFrom('contacts').select('data').where('id', '=', contact).executeTakeFirstOrThrow();
    expect(c.data).toEqual({});
  });
});

describe('SEND_EMAIL', () => {
  it('renders event, context (also top level, winning over data) and contact data; queues at workflow priority; delivered once; output records the email', async () => {
    const s = await newSender(t);
    const tpl = await api(s.project, 'POST', '/templates', {
      name: 'Receipt',
      subject: 'Order {{event.orderId}}',
      body: '<p>Hi {{firstName}}, code {{coupon}} / {{context.coupon}} for {{email}}</p>',
      from: s.from,
      type: 'TRANSACTIONAL',
    });
    expect(tpl.statusCode, tpl.body).toBe(201);
    const wf = await createWorkflow(t.db, s.project.id, {
      eventName: 'purchase',
      steps: [
        { key: 'mail', type: 'SEND_EMAIL', config: { templateId: tpl.json<{ id: string }>().id }, templateId: tpl.json<{ id: string }>().id },
        { key: 'copy', type: 'SEND_EMAIL', config: { templateId: tpl.json<{ id: string }>().id, recipient: { type: 'CUSTOM', customEmail: 'sales@team.example' } }, templateId: tpl.json<{ id: string }>().id },
      ],
      edges: [['trigger', 'mail'], ['mail', 'copy']],
    });
    await track(t.app, s.project, { email: 'buyer@x.example', event: 'purchase', data: { firstName: 'Ada', coupon: 'DATA', orderId: 'A-42' } });
    const [x] = await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    const steps = await stepsOf(t.db, x?.id ?? '');
    const outputs = steps.slice(1).map((st) => st.output as { emailId: string; outcome: string });
    expect(outputs.map((o) => o.outcome)).toEqual(['queued', 'queued']);
    const emails = await waitForStatus(t.db, outputs.map((o) => o.emailId), ['SENT']);
    const mail = emails.find((e) => e.to_email === 'buyer@x.example');
    expect(mail?.subject).toBe('Order A-42');
    expect(mail?.html).toContain('Hi Ada, code DATA / ');
    expect(mail?.workflow_execution_id).toBe(x?.id);
    expect(emails.find((e) => e.to_email === 'sales@team.example')?.subject).toBe('Order A-42');

    // Manual start with context: context keys at top level win over the contact's data.
    const res = await api(s.project, 'POST', `/workflows/${wf.id}/executions`, { email: 'buyer@x.example', context: { coupon: 'CTX' } });
    expect(res.statusCode, res.body).toBe(409); // re-entry off
    await t.db.db.updateTable('workflows').set({ allow_reentry: true }).where('id', '=', wf.id).execute();
    const again = await api(s.project, 'POST', `/workflows/${wf.id}/executions`, { email: 'buyer@x.example', context: { coupon: 'CTX' } });
    expect(again.statusCode, again.body).toBe(201);
    await waitForExecutions(t.db, wf.id, 2, ['COMPLETED']);
    const second = await t.db.db.selectFrom('emails').selectAll().where('workflow_execution_id', '=', again.json<{ id: string }>().id).where('to_email', '=', 'buyer@x.example').executeTakeFirstOrThrow();
    expect(second.html).toContain('code CTX / CTX');
    expect(second.subject).toBe('Order '); // no event on a manual start
  });
});
