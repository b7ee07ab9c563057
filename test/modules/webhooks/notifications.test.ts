import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDeps } from '../../../src/app-deps.js';
import { webhooksRoutes } from '../../../src/modules/webhooks/webhooks.routes.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp, testConfig } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { contactRow, emailRow, eventNames, seedContact, seedEmail } from '../tracking/fixtures.js';
import { CERT_URL, createSnsSigner, sesEvent, type SnsFields, TOPIC_ARN } from './sns-signer.js';

const signer = createSnsSigner();
const expired = createSnsSigner({ from: new Date('2020-01-01T00:00:00Z'), to: new Date('2021-01-01T00:00:00Z') });
const EXPIRED_URL = 'https://sns.us-east-1.amazonaws.com/expired.pem';
const UNREACHABLE_URL = 'https://sns.eu-west-1.amazonaws.com/unreachable.pem';
const certificates = new Map([
  [CERT_URL, signer.certificatePem],
  [EXPIRED_URL, expired.certificatePem],
]);
const fetched: string[] = [];
const confirmed: string[] = [];

let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp({
    // Two more mounts of the real plugin with what production gets from the network injected.
    extend: (app, db) => {
      const deps = createAppDeps(testConfig(), db.db);
      const sns = {
        fetchCertificate: async (url: string) => {
          fetched.push(url);
          const pem = certificates.get(url);
          if (!pem) throw new Error('connect ETIMEDOUT');
          return pem;
        },
        confirmSubscription: async (url: string) => {
          confirmed.push(url);
        },
      };
      void app.register(webhooksRoutes, { ...deps, prefix: '/signed', sns: { ...sns, topicArns: [TOPIC_ARN] } });
      void app.register(webhooksRoutes, { ...deps, prefix: '/unsigned', sns: { ...sns, verify: false } });
    },
  });
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

const post = (fields: SnsFields | object, opts: { mount?: string; contentType?: string } = {}) =>
  t.app.inject({
    method: 'POST',
    url: `${opts.mount ?? '/signed'}/webhooks/notifications`,
    headers: { 'content-type': opts.contentType ?? 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
    payload: JSON.stringify(fields),
  });

async function sentEmail(status: 'SENT' | 'BOUNCED' = 'SENT') {
  const contactId = await seedContact(t.db, project.id);
  const email = await seedEmail(t.db, project.id, { contactId, status });
  return { contactId, emailId: email.id, messageId: email.messageId };
}

describe('SES notifications through SNS, signed', () => {
  it('hard bounce: BOUNCED with its email.bounce event, contact unsubscribed', async () => {
    const e = await sentEmail();
    const res = await post(signer.notification(sesEvent('Bounce', { messageId: e.messageId })));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: true });
    const row = await emailRow(t.db, e.emailId);
    expect(row.status).toBe('BOUNCED');
    expect(row.bounced_at).toBeInstanceOf(Date);
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(false);
    expect(await eventNames(t.db, e.contactId)).toEqual(['contact.unsubscribed', 'email.bounce']);
    const event = await t.db.db.selectFrom('events').select('data').where('contact_id', '=', e.contactId).where('name', '=', 'email.bounce').executeTakeFirstOrThrow();
    expect(event.data).toMatchObject({ emailId: e.emailId, bounceType: 'Permanent', bounceSubType: 'General', diagnosticCode: 'smtp; 550 5.1.1 user unknown' });
  });

  it('complaint: COMPLAINED, contact unsubscribed', async () => {
    const e = await sentEmail();
    expect((await post(signer.notification(sesEvent('Complaint', { messageId: e.messageId })))).statusCode).toBe(200);
    expect((await emailRow(t.db, e.emailId)).status).toBe('COMPLAINED');
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(false);
    expect(await eventNames(t.db, e.contactId)).toEqual(['contact.unsubscribed', 'email.complaint']);
  });

  it('delivery: DELIVERED with email.delivery', async () => {
    const e = await sentEmail();
    expect((await post(signer.notification(sesEvent('Delivery', { messageId: e.messageId })))).statusCode).toBe(200);
    const row = await emailRow(t.db, e.emailId);
    expect(row.status).toBe('DELIVERED');
    expect(row.delivered_at).toBeInstanceOf(Date);
    expect(await eventNames(t.db, e.contactId)).toEqual(['email.delivery']);
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(true);
  });

  it('soft bounce: reason noted, status kept, contact stays subscribed', async () => {
    const e = await sentEmail();
    for (const bounceType of ['Transient', 'Undetermined'] as const) {
      expect((await post(signer.notification(sesEvent('Bounce', { messageId: e.messageId }, { bounceType })))).statusCode).toBe(200);
    }
    const row = await emailRow(t.db, e.emailId);
    expect(row).toMatchObject({ status: 'SENT', bounced_at: null });
    expect(row.error).toMatch(/^Soft bounce: Undetermined/);
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, e.contactId)).toEqual([]);
  });

  it('never downgrades: a delivery after a bounce keeps BOUNCED', async () => {
    const e = await sentEmail();
    await post(signer.notification(sesEvent('Bounce', { messageId: e.messageId })));
    await post(signer.notification(sesEvent('Delivery', { messageId: e.messageId })));
    expect((await emailRow(t.db, e.emailId)).status).toBe('BOUNCED');
  });

  it('records a repeated notification once and does not unsubscribe a resubscribed contact again', async () => {
    const e = await sentEmail();
    const message = signer.notification(sesEvent('Bounce', { messageId: e.messageId }));
    await post(message);
    await t.db.db.updateTable('contacts').set({ subscribed: true }).where('id', '=', e.contactId).execute();
    expect((await post(message)).statusCode).toBe(200);
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(true);
    expect(await eventNames(t.db, e.contactId)).toEqual(['contact.unsubscribed', 'email.bounce', 'contact.subscribed']);
  });

  it('finds the email by the original Message-ID header when SES reports its own id, with or without <>', async () => {
    const bare = `${randomUUID()}@sender.example`;
    for (const [stored, reported] of [
      [`<${bare}>`, bare],
      [bare, `<${bare}>`],
    ]) {
      const contactId = await seedContact(t.db, project.id);
      const { id } = await seedEmail(t.db, project.id, { contactId, messageId: stored });
      const sesId = `0100018c${randomUUID().replace(/-/g, '')}-000000`;
      expect((await post(signer.notification(sesEvent('Delivery', { messageId: sesId, headerMessageId: reported })))).statusCode).toBe(200);
      expect((await emailRow(t.db, id)).status).toBe('DELIVERED');
      await t.db.db.deleteFrom('emails').where('id', '=', id).execute();
    }
  });

  it('verifies a notification that carries a Subject (a signed field when present)', async () => {
    const e = await sentEmail();
    const signed = signer.notification(sesEvent('Delivery', { messageId: e.messageId }), { subject: 'Amazon SES Email Event Notification' });
    expect((await post({ ...signed, Subject: 'Changed' })).statusCode).toBe(403);
    expect((await post(signed)).statusCode).toBe(200);
    expect((await emailRow(t.db, e.emailId)).status).toBe('DELIVERED');
  });

  it('accepts application/json, the eventType format, and SignatureVersion 1', async () => {
    const e = await sentEmail();
    const res = await post(signer.notification(sesEvent('Delivery', { messageId: e.messageId }, { format: 'eventType' }), { version: '1' }), {
      contentType: 'application/json',
    });
    expect(res.statusCode, res.body).toBe(200);
    expect((await emailRow(t.db, e.emailId)).status).toBe('DELIVERED');
  });

  it('answers 200 to an unknown message id, and to events it does not act on', async () => {
    expect((await post(signer.notification(sesEvent('Bounce', { messageId: `<${randomUUID()}@nowhere.example>` })))).statusCode).toBe(200);
    const e = await sentEmail();
    expect((await post(signer.notification({ eventType: 'Open', mail: { messageId: e.messageId } }))).statusCode).toBe(200);
    expect((await post(signer.sign({ Type: 'Notification', MessageId: randomUUID(), TopicArn: TOPIC_ARN, Message: 'not json', Timestamp: new Date().toISOString() }))).statusCode).toBe(200);
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
  });
});

describe('signature verification', () => {
  it('refuses a message changed after signing with 403 and changes nothing', async () => {
    const e = await sentEmail();
    const signed = signer.notification(sesEvent('Delivery', { messageId: e.messageId }));
    const forged = { ...signed, Message: JSON.stringify(sesEvent('Complaint', { messageId: e.messageId })) };
    expectEnvelope(await post(forged), 403, 'FORBIDDEN');
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
    expect((await contactRow(t.db, e.contactId)).subscribed).toBe(true);
  });

  it('refuses unsigned messages, unknown signature versions and a signature of another key', async () => {
    const e = await sentEmail();
    const signed = signer.notification(sesEvent('Complaint', { messageId: e.messageId }));
    const other = createSnsSigner().notification(sesEvent('Complaint', { messageId: e.messageId }));
    for (const bad of [{ ...signed, Signature: undefined }, { ...signed, SignatureVersion: '3' }, other, { ...signed, Signature: 'AAAA' }]) {
      expectEnvelope(await post(bad), 403, 'FORBIDDEN');
    }
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
  });

  it('never fetches a certificate from a host that is not SNS', async () => {
    const e = await sentEmail();
    fetched.length = 0;
    for (const certUrl of [
      'https://evil.example.com/SimpleNotificationService.pem',
      'http://sns.us-east-1.amazonaws.com/SimpleNotificationService.pem',
      'https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService.pem',
      'https://sns.us-east-1.amazonaws.com:8443/SimpleNotificationService.pem',
      'https://sns.us-east-1.amazonaws.com/not-a-certificate.txt',
    ]) {
      expectEnvelope(await post(signer.notification(sesEvent('Complaint', { messageId: e.messageId }), { certUrl })), 403, 'FORBIDDEN');
    }
    expect(fetched).toEqual([]);
  });

  it('refuses an expired certificate, and answers 503 (SNS retries) when the certificate cannot be fetched', async () => {
    const e = await sentEmail();
    expectEnvelope(await post(expired.notification(sesEvent('Complaint', { messageId: e.messageId }), { certUrl: EXPIRED_URL })), 403, 'FORBIDDEN');
    expectEnvelope(await post(signer.notification(sesEvent('Complaint', { messageId: e.messageId }), { certUrl: UNREACHABLE_URL })), 503, 'SERVICE_UNAVAILABLE');
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
  });

  it('fetches a certificate once and keeps it', async () => {
    const before = fetched.filter((u) => u === CERT_URL).length;
    const e = await sentEmail();
    await post(signer.notification(sesEvent('Delivery', { messageId: e.messageId })));
    await post(signer.notification(sesEvent('Delivery', { messageId: e.messageId })));
    expect(fetched.filter((u) => u === CERT_URL).length - before).toBeLessThanOrEqual(1);
  });

  it('refuses a validly signed message of a topic that is not allowed', async () => {
    const e = await sentEmail();
    const res = await post(signer.notification(sesEvent('Complaint', { messageId: e.messageId }), { topicArn: 'arn:aws:sns:us-east-1:999999999999:attacker' }));
    expectEnvelope(res, 403, 'FORBIDDEN');
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
  });

  it('requires a signature on the real mount by default (no network: refused before any fetch)', async () => {
    const e = await sentEmail();
    const signed = signer.notification(sesEvent('Complaint', { messageId: e.messageId }), { certUrl: 'https://evil.example.com/x.pem' });
    expectEnvelope(await post(signed, { mount: '' }), 403, 'FORBIDDEN');
    expectEnvelope(await post({ ...signed, Signature: undefined, SigningCertURL: undefined }, { mount: '' }), 403, 'FORBIDDEN');
    expect((await emailRow(t.db, e.emailId)).status).toBe('SENT');
  });

  it('takes unsigned messages when verification is off', async () => {
    const e = await sentEmail();
    const unsigned = { Type: 'Notification', MessageId: randomUUID(), TopicArn: TOPIC_ARN, Timestamp: new Date().toISOString(), Message: JSON.stringify(sesEvent('Delivery', { messageId: e.messageId })) };
    expect((await post(unsigned, { mount: '/unsigned' })).statusCode).toBe(200);
    expect((await emailRow(t.db, e.emailId)).status).toBe('DELIVERED');
  });

  it('answers 400 to a body that is not an SNS message', async () => {
    expectEnvelope(await t.app.inject({ method: 'POST', url: '/signed/webhooks/notifications', headers: { 'content-type': 'text/plain' }, payload: 'hello' }), 400, 'BAD_REQUEST');
    expectEnvelope(await post({ hello: 'world' }), 400, 'BAD_REQUEST');
  });
});

describe('subscription confirmation', () => {
  it('confirms a verified subscription by visiting its SubscribeURL', async () => {
    confirmed.length = 0;
    const message = signer.subscriptionConfirmation();
    expect((await post(message)).statusCode).toBe(200);
    expect(confirmed).toEqual([message.SubscribeURL]);
  });

  it('does not confirm a SubscribeURL off SNS, a forged confirmation, or an unverified one', async () => {
    confirmed.length = 0;
    expect((await post(signer.subscriptionConfirmation({ subscribeUrl: 'https://evil.example.com/confirm' }))).statusCode).toBe(200);
    const forged = { ...signer.subscriptionConfirmation(), SubscribeURL: 'https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=x&Token=y' };
    expectEnvelope(await post(forged), 403, 'FORBIDDEN');
    expect((await post(signer.subscriptionConfirmation(), { mount: '/unsigned' })).statusCode).toBe(200);
    expect(confirmed).toEqual([]);
  });
});
