import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { describeProvider, fixture, type Kind, type SignedRequest } from './providers-setup.js';

/**
 * Postmark has no HMAC: its webhook URL carries HTTP Basic credentials
 * (https://user:password@host/webhooks/notifications), which it sends as an Authorization header.
 */
const USER = 'postmark';
const PASSWORD = `pw-${randomUUID()}`;
const FIXTURES: Record<Kind, string> = { bounce: 'postmark-bounce.json', complaint: 'postmark-spam-complaint.json', delivery: 'postmark-delivery.json' };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describeProvider(
  {
    name: 'Postmark',
    env: { POSTMARK_WEBHOOK_USER: USER, POSTMARK_WEBHOOK_PASSWORD: PASSWORD },
    signed: (kind, d): SignedRequest => ({ payload: fixture(FIXTURES[kind], d), headers: { authorization: basic(USER, PASSWORD) } }),
    unsigned: (req) => ({ payload: req.payload, headers: {} }),
    wronglySigned: (kind, d) => ({ payload: fixture(FIXTURES[kind], d), headers: { authorization: basic(USER, `${PASSWORD}x`) } }),
    timestamps: false,
    bodySigned: false,
  },
  (ctx) => {
    it('a Transient bounce is soft; an AutoResponder is no bounce at all', async () => {
      const d = await ctx.sent();
      const soft = fixture(FIXTURES.bounce, d).replace('"Type": "HardBounce"', '"Type": "Transient"').replace('"TypeCode": 1', '"TypeCode": 2');
      expect((await ctx.post({ payload: soft, headers: { authorization: basic(USER, PASSWORD) } })).statusCode).toBe(200);
      expect(await ctx.state(d)).toMatchObject({ status: 'SENT', subscribed: true, suppression: undefined });
      const row = await ctx.t.db.db.selectFrom('emails').select('error').where('id', '=', d.emailId).executeTakeFirstOrThrow();
      expect(row.error).toMatch(/^Soft bounce: Transient: Transient: smtp;550/);
      const e = await ctx.sent();
      const auto = fixture(FIXTURES.bounce, e).replace('"Type": "HardBounce"', '"Type": "AutoResponder"').replace('"TypeCode": 1', '"TypeCode": 64');
      expect((await ctx.post({ payload: auto, headers: { authorization: basic(USER, PASSWORD) } })).statusCode).toBe(200);
      expect(await ctx.state(e)).toEqual({ status: 'SENT', events: ['email.sent'], subscribed: true, suppression: undefined });
    });

    it('names each email for Postmark: X-PM-Metadata-email-id on the outgoing message, and a delivery matched by it alone', async () => {
      const d = await ctx.sent();
      // Header names are case-insensitive (the composer writes X-Pm-Metadata-Email-Id).
      expect(ctx.receivedHead(d).toLowerCase()).toContain(`\r\nx-pm-metadata-email-id: ${d.emailId}\r\n`);
      const delivery = fixture(FIXTURES.delivery, d);
      expect(delivery).not.toContain(d.messageId.replace(/[<>]/g, ''));
      expect((await ctx.post({ payload: delivery, headers: { authorization: basic(USER, PASSWORD) } })).statusCode).toBe(200);
      expect((await ctx.state(d)).status).toBe('DELIVERED');
    });

    it('refuses credentials of another user name', async () => {
      const d = await ctx.sent();
      const res = await ctx.post({ payload: fixture(FIXTURES.bounce, d), headers: { authorization: basic('someone', PASSWORD) } });
      expect(res.statusCode).toBe(403);
      expect((await ctx.state(d)).status).toBe('SENT');
    });
  },
);
