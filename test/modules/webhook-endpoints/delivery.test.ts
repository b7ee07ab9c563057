import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscriptionUrls, TokenPurpose } from '../../../src/mail/compliance.js';
import { recordMilestone } from '../../../src/modules/emails/index.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { api, createCampaign, seedContacts, waitForCampaign } from '../campaigns/helpers.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { seedContact, seedEmail } from '../tracking/fixtures.js';
import { createWorkflow, track, waitForExecutions } from '../workflows/engine-helpers.js';
import { type Call, deliveriesOf, expectSigned, type Receiver, registerEndpoint, startReceiver, waitForCalls } from './helpers.js';

/**
 * Real deliveries end to end: a real /v1/send through the SMTP sink, the real tracking routes,
 * the hosted unsubscribe page, a campaign and workflow executions run by the real worker, each
 * reaching a real HTTP receiver on loopback that checks the HMAC signature and its timestamp.
 */

let sink: SmtpSink;
let r: Receiver;
let t: SendTestApp;
beforeAll(async () => {
  [sink, r] = await Promise.all([startSmtpSink(), startReceiver()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await Promise.all([sink?.close(), r?.close()]);
});

const path = () => `/hook/${randomUUID()}`;
const byType = (calls: Call[], type: string) => calls.filter((c) => c.json.type === type);

async function sender(): Promise<{ project: TestProject; from: string }> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  return { project, from: `hello@${domain}` };
}

/** The open pixel and the click redirect paths of a delivered message. */
function trackingPaths(raw: Buffer): { open: string; click: string } {
  const text = raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const open = /http:\/\/localhost:8080(\/t\/o\/[\w.-]+)/.exec(text)?.[1];
  const click = /http:\/\/localhost:8080(\/t\/c\/[\w.-]+)/.exec(text)?.[1];
  if (!open || !click) throw new Error('no tracking links in the message');
  return { open, click };
}

describe('email lifecycle and subscription events', () => {
  it('a real /v1/send, its open and click, a bounce and an unsubscribe reach the receiver signed, with our ids; another endpoint gets only its types', async () => {
    const s = await sender();
    const all = path();
    const clicksOnly = path();
    const endpoint = await registerEndpoint(t.app, s.project, `${r.url}${all}`, ['email.sent', 'email.open', 'email.click', 'email.bounce', 'contact.unsubscribed']);
    const clickEndpoint = await registerEndpoint(t.app, s.project, `${r.url}${clicksOnly}`, ['email.click']);

    const res = await send(t.app, s.project, {
      to: 'ada@example.com',
      from: s.from,
      subscribed: true,
      subject: 'Welcome',
      body: '<html><body><p>See <a href="https://example.com/docs">the docs</a>.</p></body></html>',
    });
    expect(res.statusCode, res.body).toBe(200);
    const answer = res.json<SendAnswer>().data.emails[0];
    const emailId = answer?.email ?? '';
    const contact = answer?.contact ?? { id: '', email: '' };
    await waitForStatus(t.db, [emailId], ['SENT']);

    const [sent] = await waitForCalls(r, all, 1);
    expect(sent).toBeDefined();
    if (!sent) return;
    expectSigned(sent, endpoint.secret);
    const sentEvent = await t.db.db.selectFrom('events').selectAll().where('contact_id', '=', contact.id).where('name', '=', 'email.sent').executeTakeFirstOrThrow();
    expect(sent.json).toEqual({
      id: sentEvent.id,
      type: 'email.sent',
      createdAt: sentEvent.created_at.toISOString(),
      data: expect.objectContaining({
        emailId,
        contact: { id: contact.id, email: 'ada@example.com' },
        to: 'ada@example.com',
        from: s.from,
        subject: 'Welcome',
        campaignId: null,
        workflowId: null,
        workflowExecutionId: null,
        occurredAt: sentEvent.created_at.toISOString(),
      }),
    });

    const message = sink.messagesTo('ada@example.com')[0];
    const { open, click } = trackingPaths(message?.raw ?? Buffer.alloc(0));
    expect((await t.app.inject({ method: 'GET', url: open })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: click })).statusCode).toBe(302);
    await waitForCalls(r, all, 3);
    const opened = byType(r.callsTo(all), 'email.open')[0];
    const clicked = byType(r.callsTo(all), 'email.click')[0];
    for (const c of [opened, clicked]) if (c) expectSigned(c, endpoint.secret);
    expect(opened?.json.data).toMatchObject({ emailId, contact: { id: contact.id, email: 'ada@example.com' } });
    expect(opened?.json.data).not.toHaveProperty('machine');
    expect(clicked?.json.data).toMatchObject({ emailId, url: 'https://example.com/docs', contact: { id: contact.id } });

    // The relay's hard bounce (what webhooks/notifications records), then the hosted unsubscribe page.
    await t.db.db.transaction().execute((trx) =>
      recordMilestone(trx, { emailId, status: 'BOUNCED', data: { bounceType: 'Permanent', bounceSubType: 'General', diagnosticCode: 'smtp; 550 5.1.1 user unknown' } }),
    );
    await waitForCalls(r, all, 4);
    expect(byType(r.callsTo(all), 'email.bounce')[0]?.json.data).toMatchObject({
      emailId,
      bounceType: 'Permanent',
      bounceSubType: 'General',
      diagnosticCode: 'smtp; 550 5.1.1 user unknown',
    });
    const urls = subscriptionUrls(
      { emailId, projectId: s.project.id, contactId: contact.id, type: 'MARKETING', tracking: 'ENABLED' },
      { tokens: t.deps.tokens, publicUrl: t.config.publicUrl },
    );
    const unsubscribe = String(urls.unsubscribeUrl).replace(t.config.publicUrl, '');
    const page = await t.app.inject({ method: 'POST', url: unsubscribe, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' });
    expect(page.statusCode, page.body).toBe(200);
    await waitForCalls(r, all, 5);
    const unsubscribed = byType(r.callsTo(all), 'contact.unsubscribed')[0];
    if (unsubscribed) expectSigned(unsubscribed, endpoint.secret);
    expect(unsubscribed?.json.data).toMatchObject({ contact: { id: contact.id, email: 'ada@example.com', subscribed: false }, occurredAt: expect.any(String) });

    // The click-only endpoint got exactly the click, signed with its own secret; the delivery logs agree.
    const clickCalls = await waitForCalls(r, clicksOnly, 1);
    expect(clickCalls.map((c) => c.json.type)).toEqual(['email.click']);
    if (clickCalls[0]) expectSigned(clickCalls[0], clickEndpoint.secret);
    expect(clickCalls[0]?.json.id).toBe(clicked?.json.id);
    await until('every delivery recorded', async () => (await deliveriesOf(t.db, endpoint.id)).every((d) => d.status === 'DELIVERED'));
    const rows = await deliveriesOf(t.db, endpoint.id);
    expect(rows.map((d) => d.event_type).sort()).toEqual(['contact.unsubscribed', 'email.bounce', 'email.click', 'email.open', 'email.sent']);
    expect(rows.every((d) => d.attempts === 1 && d.status_code === 200 && d.response_excerpt === 'ok')).toBe(true);
    const types = r.callsTo(all).map((c) => c.json.type);
    expect(types.sort()).toEqual(['contact.unsubscribed', 'email.bounce', 'email.click', 'email.open', 'email.sent']);
    expect((await deliveriesOf(t.db, clickEndpoint.id)).map((d) => d.event_type)).toEqual(['email.click']);
  });

  it("marks an open a privacy proxy's fetch made (machine: true)", async () => {
    const { project } = await newProject(t.app);
    const p = path();
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['email.open']);
    const contactId = await seedContact(t.db, project.id);
    const { id: emailId } = await seedEmail(t.db, project.id, { contactId });
    const res = await t.app.inject({ method: 'GET', url: `/t/o/${t.deps.tokens.sign(TokenPurpose.open, { e: emailId })}`, headers: { 'user-agent': 'Mozilla/5.0 (Barracuda link protection)' } });
    expect(res.statusCode).toBe(200);
    const [call] = await waitForCalls(r, p, 1);
    if (call) expectSigned(call, e.secret);
    expect(call?.json).toMatchObject({ type: 'email.open', data: { emailId, machine: true, contact: { id: contactId } } });
  });

  it('captures nothing for a disabled endpoint or a project without endpoints', async () => {
    const s = await sender();
    const p = path();
    const e = await registerEndpoint(t.app, s.project, `${r.url}${p}`, ['email.sent']);
    await t.app.inject({ method: 'PATCH', url: `/webhook-endpoints/${e.id}`, headers: bearer(s.project.secret), payload: { enabled: false } });
    const res = await send(t.app, s.project, { to: 'bob@example.com', from: s.from, subject: 'Hi', body: '<p>Hi</p>' });
    await waitForStatus(t.db, [res.json<SendAnswer>().data.emails[0]?.email ?? ''], ['SENT']);
    expect(await deliveriesOf(t.db, e.id)).toEqual([]);
    expect(r.callsTo(p)).toEqual([]);
  });
});

describe('campaign and workflow events', () => {
  it('campaign.sent once the campaign is SENT', async () => {
    const { project } = await newProject(t.app);
    const { domain } = await addVerifiedDomain(t, project.id);
    const p = path();
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['campaign.sent']);
    await seedContacts(t.db, project.id, 3, { tag: randomUUID().slice(0, 8) });
    const campaign = await createCampaign(t, { project, domain, from: `news@${domain}` }, { name: 'Spring' });
    const started = await api(t.app, project, 'POST', `/campaigns/${campaign.id}/send`, {});
    expect(started.statusCode, started.body).toBe(200);
    await waitForCampaign(t, campaign.id, ['SENT']);
    const [call] = await waitForCalls(r, p, 1);
    if (call) expectSigned(call, e.secret);
    expect(call?.json).toMatchObject({ type: 'campaign.sent', data: { campaignId: campaign.id, name: 'Spring', totalRecipients: 3, occurredAt: expect.any(String) } });
  });

  it('workflow.completed and workflow.failed with the workflow, execution and contact', async () => {
    const { project } = await newProject(t.app);
    const p = path();
    const failing = path();
    r.answer(failing, { status: 400, body: 'no' });
    const e = await registerEndpoint(t.app, project, `${r.url}${p}`, ['workflow.completed', 'workflow.failed']);
    const done = await createWorkflow(t.db, project.id, { eventName: 'signup', steps: [], edges: [] });
    const broken = await createWorkflow(t.db, project.id, {
      eventName: 'order',
      steps: [{ key: 'hook', type: 'WEBHOOK', config: { url: `${r.url}${failing}` } }],
      edges: [['trigger', 'hook']],
    });
    const { contact } = await track(t.app, project, { email: 'wf@example.com', event: 'signup' });
    await track(t.app, project, { email: 'wf@example.com', event: 'order' });
    const [completed] = await waitForExecutions(t.db, done.id, 1, ['COMPLETED']);
    const [failed] = await waitForExecutions(t.db, broken.id, 1, ['FAILED']);
    const calls = await waitForCalls(r, p, 2);
    for (const c of calls) expectSigned(c, e.secret);
    expect(byType(calls, 'workflow.completed')[0]?.json.data).toMatchObject({
      workflowId: done.id,
      workflowName: 'wf signup',
      workflowExecutionId: completed?.id,
      status: 'COMPLETED',
      contact: { id: contact, email: 'wf@example.com' },
    });
    expect(byType(calls, 'workflow.failed')[0]?.json.data).toMatchObject({
      workflowId: broken.id,
      workflowExecutionId: failed?.id,
      status: 'FAILED',
      error: expect.stringContaining('400'),
    });
  });
});
