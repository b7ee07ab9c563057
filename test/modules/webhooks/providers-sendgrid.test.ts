import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { expect, it } from 'vitest';
import { expectEnvelope } from '../../helpers/envelope.js';
import { describeProvider, fixture, type Kind, nowSeconds, type SignedRequest } from './providers-setup.js';

/** SendGrid's Signed Event Webhook: ECDSA P-256 over timestamp + raw body, with a key generated here. */
const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const FIXTURES: Record<Kind, string> = { bounce: 'sendgrid-bounce.json', complaint: 'sendgrid-spamreport.json', delivery: 'sendgrid-delivered.json' };

function signWith(key: KeyObject, payload: string, at = nowSeconds()): SignedRequest {
  const timestamp = String(at);
  const signature = sign('sha256', Buffer.from(timestamp + payload), key).toString('base64');
  return { payload, headers: { 'x-twilio-email-event-webhook-signature': signature, 'x-twilio-email-event-webhook-timestamp': timestamp } };
}

describeProvider(
  {
    name: 'SendGrid',
    env: { SENDGRID_WEBHOOK_PUBLIC_KEY: keys.publicKey.export({ type: 'spki', format: 'der' }).toString('base64') },
    signed: (kind, d, opts) => signWith(keys.privateKey, fixture(FIXTURES[kind], d), opts?.at),
    unsigned: (req) => ({ payload: req.payload, headers: {} }),
    wronglySigned: (kind, d) => signWith(other.privateKey, fixture(FIXTURES[kind], d)),
    timestamps: true,
    bodySigned: true,
  },
  (ctx) => {
    it('applies every event of a batch; blocked is a soft bounce; dropped for a bounced address is hard', async () => {
      const [a, b, c] = [await ctx.sent(), await ctx.sent(), await ctx.sent()];
      const events = [
        { email: a.to, timestamp: nowSeconds(), 'smtp-id': a.messageId, event: 'delivered', sg_event_id: `${a.emailId}-d`, response: '250 OK' },
        { email: b.to, timestamp: nowSeconds(), 'smtp-id': b.messageId, event: 'bounce', type: 'blocked', sg_event_id: `${b.emailId}-b`, reason: '421 try later', status: '4.0.0' },
        { email: c.to, timestamp: nowSeconds(), 'smtp-id': c.messageId, event: 'dropped', sg_event_id: `${c.emailId}-x`, reason: 'Bounced Address' },
        { email: c.to, timestamp: nowSeconds(), 'smtp-id': c.messageId, event: 'open', sg_event_id: `${c.emailId}-o` },
      ];
      const res = await ctx.post(signWith(keys.privateKey, JSON.stringify(events)));
      expect(res.statusCode, res.body).toBe(200);
      expect((await ctx.state(a)).status).toBe('DELIVERED');
      expect(await ctx.state(b)).toMatchObject({ status: 'SENT', subscribed: true, suppression: undefined });
      const row = await ctx.t.db.db.selectFrom('emails').select('error').where('id', '=', b.emailId).executeTakeFirstOrThrow();
      expect(row.error).toMatch(/^Soft bounce: Transient: blocked: 4\.0\.0 421 try later/);
      expect(await ctx.state(c)).toMatchObject({ status: 'BOUNCED', suppression: 'HARD_BOUNCE' });
    });

    it('recognises SendGrid by its headers or ?provider=sendgrid, and refuses an unknown ?provider=', async () => {
      const d = await ctx.sent();
      const body = fixture(FIXTURES.bounce, d);
      // No headers, a body of another shape: only the query names SendGrid, and the missing signature is refused.
      expectEnvelope(await ctx.post({ payload: JSON.stringify({ events: JSON.parse(body) }), headers: {} }, '?provider=sendgrid'), 403, 'FORBIDDEN');
      expectEnvelope(await ctx.post({ payload: body, headers: {} }, '?provider=sparkpost'), 400, 'BAD_REQUEST');
      expect((await ctx.state(d)).status).toBe('SENT');
    });
  },
);
