import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { createTestApp, type TestApp, TEST_SECRET } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';

/** Provider webhooks on a server without their secrets, and the validation of those variables. */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const post = (payload: unknown, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url: '/webhooks/notifications', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(payload) });

describe('a provider whose secret is not configured', () => {
  it('is refused with 403 naming the variable to set', async () => {
    const cases: [unknown, Record<string, string>, RegExp][] = [
      [{ RecordType: 'Bounce', ID: 1, Type: 'HardBounce' }, { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, /^Postmark webhooks are not accepted: set POSTMARK_WEBHOOK_USER and POSTMARK_WEBHOOK_PASSWORD, or POSTMARK_WEBHOOK_HEADER/],
      [{ signature: { timestamp: '1', token: 't', signature: 's' }, 'event-data': { event: 'failed' } }, {}, /^Mailgun webhooks are not accepted: set MAILGUN_WEBHOOK_SIGNING_KEY/],
      [[{ event: 'bounce', sg_event_id: 'x' }], { 'x-twilio-email-event-webhook-signature': 'c2ln', 'x-twilio-email-event-webhook-timestamp': '1' }, /^SendGrid webhooks are not accepted: set SENDGRID_WEBHOOK_PUBLIC_KEY/],
      [{ type: 'email.bounced', data: {} }, { 'svix-id': 'msg_1', 'svix-timestamp': '1', 'svix-signature': 'v1,c2ln' }, /^Resend webhooks are not accepted: set RESEND_WEBHOOK_SECRET/],
    ];
    for (const [body, headers, message] of cases) {
      expect(expectEnvelope(await post(body, headers), 403, 'FORBIDDEN').message).toMatch(message);
    }
  });

  it('leaves SNS messages to the SES path (a body that is none of them is still a 400 about SNS)', async () => {
    expect(expectEnvelope(await post({ hello: 'world' }), 400, 'BAD_REQUEST').message).toMatch(/SNS message/);
  });
});

describe('configuration', () => {
  const load = (env: Record<string, string>) => () => loadConfig({ DATABASE_URL: 'postgres://x@localhost/x', SECRET: TEST_SECRET, ...env });
  it('requires the Postmark user and password together', () => {
    expect(load({ POSTMARK_WEBHOOK_USER: 'u' })).toThrow('POSTMARK_WEBHOOK_PASSWORD must be set with POSTMARK_WEBHOOK_USER');
    expect(load({ POSTMARK_WEBHOOK_PASSWORD: 'p' })).toThrow('POSTMARK_WEBHOOK_USER must be set with POSTMARK_WEBHOOK_PASSWORD');
    expect(load({ POSTMARK_WEBHOOK_USER: 'u', POSTMARK_WEBHOOK_PASSWORD: 'p' })().providerWebhooks.postmark).toEqual({ basic: { user: 'u', password: 'p' } });
    expect(load({ POSTMARK_WEBHOOK_HEADER: 'X-Webhook-Token: 0123456789abcdef' })().providerWebhooks.postmark).toEqual({ header: { name: 'x-webhook-token', value: '0123456789abcdef' } });
    expect(load({ POSTMARK_WEBHOOK_HEADER: 'X-Webhook-Token: short' })).toThrow(/POSTMARK_WEBHOOK_HEADER must be "Name: value"/);
    expect(load({ POSTMARK_WEBHOOK_HEADER: 'no colon here at all' })).toThrow(/POSTMARK_WEBHOOK_HEADER must be "Name: value"/);
  });

  it('checks the SendGrid key and the Resend secret', () => {
    expect(load({ SENDGRID_WEBHOOK_PUBLIC_KEY: 'not a key' })).toThrow(/SENDGRID_WEBHOOK_PUBLIC_KEY must be the verification key/);
    const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    expect(load({ SENDGRID_WEBHOOK_PUBLIC_KEY: key })().providerWebhooks.sendgridPublicKey).toBe(key);
    expect(load({ RESEND_WEBHOOK_SECRET: 'secret' })).toThrow(/RESEND_WEBHOOK_SECRET must be the signing secret/);
    expect(load({ RESEND_WEBHOOK_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' })().providerWebhooks.resendSecret).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(load({})().providerWebhooks).toEqual({ postmark: undefined, mailgunSigningKey: undefined, sendgridPublicKey: undefined, resendSecret: undefined });
  });
});

describe('Postmark with a custom header', () => {
  const TOKEN = 'tok-0123456789abcdef-secret';
  let h: TestApp;
  beforeAll(async () => {
    h = await createTestApp({ env: { POSTMARK_WEBHOOK_HEADER: `X-Webhook-Token: ${TOKEN}` } });
  });
  afterAll(() => h.close());
  const delivery = { RecordType: 'Delivery', MessageID: 'x', Recipient: 'a@example.com', Metadata: {}, Details: 'OK' };
  const postTo = (headers: Record<string, string>) =>
    h.app.inject({ method: 'POST', url: '/webhooks/notifications?provider=postmark', headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(delivery) });

  it('requires the configured header (and no Basic credentials when none are configured)', async () => {
    expect((await postTo({ 'x-webhook-token': TOKEN })).statusCode).toBe(200);
    expect(expectEnvelope(await postTo({}), 403, 'FORBIDDEN').message).toMatch(/no x-webhook-token header/);
    expect(expectEnvelope(await postTo({ 'x-webhook-token': `${TOKEN}x` }), 403, 'FORBIDDEN').message).toMatch(/wrong x-webhook-token header/);
  });
});
