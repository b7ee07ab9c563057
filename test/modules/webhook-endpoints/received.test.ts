import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerp, type InboundReceiver } from '../../../src/modules/bounces/index.js';
import { bearer } from '../../helpers/accounts.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { startTestReceiver } from '../bounces/helpers.js';
import { smtpMail } from '../bounces/inbound-mail-helpers.js';
import { createSendTestApp, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { expectSigned, type Receiver, registerEndpoint, startReceiver, waitForCalls } from './helpers.js';

/**
 * `email.received` endpoints (docs/webhooks-outgoing.md): a message received at a project's inbound
 * domain reaches the endpoint signed, with the received message's fields (not those of the email
 * it replies to) and the link to that email.
 */

let sink: SmtpSink;
let r: Receiver;
let t: SendTestApp;
let inbound: InboundReceiver;
beforeAll(async () => {
  [sink, r] = await Promise.all([startSmtpSink(), startReceiver()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, WEBHOOK_ALLOW_PRIVATE: 'true', BOUNCE_DOMAIN: 'bounces.test' } });
  await t.runWorker();
  inbound = await startTestReceiver(t.db.db, createVerp(TEST_SECRET, 'bounces.test'), { maxSizeBytes: 1024 * 1024 });
}, 60_000);
afterAll(async () => {
  await inbound?.close();
  await t?.close();
  await Promise.all([sink?.close(), r?.close()]);
});

describe('email.received endpoints', () => {
  it('a reply to a sent email reaches the endpoint signed, with its own subject, sender and text, and the id of the email it answers', async () => {
    const s = await newSender(t);
    const domainId = (await t.db.db.selectFrom('domains').select('id').where('domain', '=', s.domain).executeTakeFirstOrThrow()).id;
    const patch = await t.app.inject({ method: 'PATCH', url: `/domains/${domainId}`, headers: bearer(s.project.secret), payload: { inboundEnabled: true } });
    expect(patch.statusCode, patch.body).toBe(200);
    const path = `/hook/${randomUUID()}`;
    const endpoint = await registerEndpoint(t.app, s.project, `${r.url}${path}`, ['email.received']);

    const person = `p${randomUUID().slice(0, 8)}@people.example`;
    const res = await send(t.app, s.project, { to: person, from: s.from, subject: 'Your order', body: '<p>Shipped</p>' });
    expect(res.statusCode, res.body).toBe(200);
    const emailId = res.json<SendAnswer>().data.emails[0]?.email ?? '';
    await waitForStatus(t.db, [emailId], ['SENT']);
    const ours = await t.db.db.selectFrom('emails').select(['message_id']).where('id', '=', emailId).executeTakeFirstOrThrow();

    const to = `support@${s.domain}`;
    const answer = await smtpMail(inbound.port, { from: person, to: [to] }, { from: person, to, subject: 'Re: Your order', text: 'Where is it?', inReplyTo: ours.message_id });
    expect(answer).toMatchObject({ ok: true });

    const [call] = await waitForCalls(r, path, 1);
    expect(call?.json.type).toBe('email.received');
    if (call) expectSigned(call, endpoint.secret);
    const contact = await t.db.db.selectFrom('contacts').select(['id', 'email']).where('project_id', '=', s.project.id).where('email', '=', person).executeTakeFirstOrThrow();
    expect(call?.json.data).toMatchObject({
      contact: { id: contact.id, email: person },
      subject: 'Re: Your order',
      from: person,
      text: expect.stringContaining('Where is it?'),
      emailId,
      reply: true,
      inReplyTo: ours.message_id,
    });
    expect(call?.json.data.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(call?.json.data.inboundMessageId).toMatch(/^[0-9a-f-]{36}$/);
  }, 60_000);
});
