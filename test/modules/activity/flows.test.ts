import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { createSendTestApp, newSender, type SendTestApp, type Sender } from '../emails/helpers.js';
import { waitForCampaign } from '../campaigns/helpers.js';
import { allPages, get } from './helpers.js';

/**
 * The feed and the upcoming list fed by the real paths: campaigns and a workflow built and run
 * through the API with a worker (own database: the worker delivers this file's mail only).
 */
let t: SendTestApp;
let s: Sender;
beforeAll(async () => {
  t = await createSendTestApp();
  await t.runWorker();
  s = await newSender(t);
});
afterAll(async () => t?.close());

const call = (p: TestProject, method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
  t.app.inject({ method, url, headers: bearer(p.secret), ...(payload !== undefined && { payload }) });

async function ok<T>(res: Promise<{ statusCode: number; body: string; json: <U>() => U }>, status = 200): Promise<T> {
  const r = await res;
  expect(r.statusCode, r.body).toBe(status);
  return r.json<T>();
}

interface UpcomingJson {
  data: { type: string; dueAt: string; campaign?: { id: string; name: string; subject: string }; workflow?: { id: string; name: string }; step?: { id: string; name: string; type: string }; execution?: { id: string }; contact?: { id: string; email: string } }[];
  hasMore: boolean;
  until: string;
}

describe('activity of real campaigns and workflows', () => {
  it('lists a waiting DELAY step and a scheduled campaign as upcoming, and a sent campaign with its emails in the feed', async () => {
    const p = s.project;
    // A workflow TRIGGER → DELAY 2 days, enabled, triggered by a tracked event.
    const wf = await ok<{ id: string }>(call(p, 'POST', '/workflows', { name: 'Nurture', eventName: 'trial_started' }), 201);
    const detail = await ok<{ steps: { id: string; type: string }[] }>(call(p, 'GET', `/workflows/${wf.id}`));
    const trigger = detail.steps.find((st) => st.type === 'TRIGGER')?.id ?? '';
    const delay = await ok<{ id: string }>(call(p, 'POST', `/workflows/${wf.id}/steps`, { type: 'DELAY', name: 'Two days', config: { amount: 2, unit: 'days' } }), 201);
    await ok(call(p, 'POST', `/workflows/${wf.id}/transitions`, { fromStepId: trigger, toStepId: delay.id }), 201);
    await ok(call(p, 'PATCH', `/workflows/${wf.id}`, { enabled: true }));
    const tracked = await ok<{ data: { contact: string; event: string } }>(
      t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(p.public), payload: { email: 'wendy@act.example', event: 'trial_started', data: { plan: 'team' } } }),
    );
    await until('the execution waits on its DELAY', async () => {
      const row = await t.db.db.selectFrom('workflow_step_executions').select('status').where('step_id', '=', delay.id).executeTakeFirst();
      return row?.status === 'WAITING';
    });

    // A campaign scheduled two days ahead, and one sent now to the project's contacts.
    const later = await ok<{ data: { id: string } }>(call(p, 'POST', '/campaigns', { name: 'Later', subject: 'Soon', body: '<p>x</p>', from: s.from }), 201);
    const dueAt = new Date(Date.now() + 2 * 86_400_000 + 3600_000).toISOString();
    await ok(call(p, 'POST', `/campaigns/${later.data.id}/send`, { scheduledFor: dueAt }));
    const now = await ok<{ data: { id: string } }>(call(p, 'POST', '/campaigns', { name: 'Now', subject: 'Hello now', body: '<p>x</p>', from: s.from }), 201);
    await ok(call(p, 'POST', `/campaigns/${now.data.id}/send`, {}));
    await waitForCampaign(t, now.data.id, ['SENT']);

    const upcoming = await ok<UpcomingJson>(call(p, 'GET', '/activity/upcoming?daysAhead=3'));
    expect(upcoming.data.map((u) => u.type)).toEqual(['workflow.step', 'campaign.scheduled']);
    const [step, campaign] = upcoming.data;
    expect(step).toMatchObject({
      workflow: { id: wf.id, name: 'Nurture' },
      step: { id: delay.id, name: 'Two days', type: 'DELAY' },
      execution: { id: expect.any(String) },
      contact: { id: tracked.data.contact, email: 'wendy@act.example' },
    });
    expect(Math.abs(new Date(step?.dueAt ?? '').getTime() - (Date.now() + 2 * 86_400_000))).toBeLessThan(60_000);
    expect(campaign).toEqual({ type: 'campaign.scheduled', dueAt, campaign: { id: later.data.id, name: 'Later', subject: 'Soon' } });
    // A day ahead: neither is due yet.
    expect((await ok<UpcomingJson>(call(p, 'GET', '/activity/upcoming?daysAhead=1'))).data).toEqual([]);
    const one = await ok<UpcomingJson>(call(p, 'GET', '/activity/upcoming?daysAhead=500&limit=1'));
    expect(one).toMatchObject({ hasMore: true, data: [{ type: 'workflow.step' }] });
    expect(new Date(one.until).getTime() - Date.now()).toBeLessThanOrEqual(90 * 86_400_000);
    expect((await call(p, 'GET', '/activity/upcoming?daysAhead=0')).statusCode).toBe(422);

    const items = await allPages(t.app, p, '', 4);
    const types = items.map((i) => i.type);
    expect(types).toEqual(expect.arrayContaining(['campaign.sent', 'email.sent', 'workflow.started', 'event.tracked']));
    expect(types).not.toContain('campaign.scheduled');
    expect(items.find((i) => i.type === 'campaign.sent')).toMatchObject({ metadata: { campaign: { id: now.data.id, name: 'Now' }, subject: 'Hello now', totalRecipients: 1 } });
    expect(items.find((i) => i.type === 'email.sent')).toMatchObject({
      contact: { id: tracked.data.contact, email: 'wendy@act.example' },
      metadata: { campaign: { id: now.data.id, name: 'Now' }, subject: 'Hello now', emailId: expect.any(String) },
    });
    expect(items.find((i) => i.type === 'workflow.started')).toMatchObject({ contact: { email: 'wendy@act.example' }, metadata: { workflow: { id: wf.id, name: 'Nurture' }, status: 'WAITING' } });
    expect(items.find((i) => i.type === 'event.tracked')).toMatchObject({ id: tracked.data.event, metadata: { name: 'trial_started', data: { plan: 'team' } } });
    // The email's own milestones would follow it: its id leads to the row.
    const emailId = items.find((i) => i.type === 'email.sent')?.metadata.emailId;
    expect((await get(t.app, p, `/emails/${String(emailId)}`)).statusCode).toBe(200);
  }, 60_000);
});
