import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { describeProvider, fixture, type Kind, nowSeconds, type SignedRequest } from './providers-setup.js';

/** Resend delivers through Svix: v1,<base64 HMAC-SHA256(secret bytes, id.timestamp.body)>. */
const secretOf = () => `whsec_${randomBytes(24).toString('base64')}`;
const SECRET = secretOf();
const FIXTURES: Record<Kind, string> = { bounce: 'resend-bounced.json', complaint: 'resend-complained.json', delivery: 'resend-delivered.json' };

function signWith(secret: string, payload: string, at = nowSeconds(), id = `msg_${randomUUID().replace(/-/g, '')}`): SignedRequest {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${at}.${payload}`).digest('base64');
  return { payload, headers: { 'svix-id': id, 'svix-timestamp': String(at), 'svix-signature': `v1,${signature}` } };
}

describeProvider(
  {
    name: 'Resend',
    env: { RESEND_WEBHOOK_SECRET: SECRET },
    signed: (kind, d, opts) => signWith(SECRET, fixture(FIXTURES[kind], d), opts?.at),
    unsigned: (req) => ({ payload: req.payload, headers: {} }),
    wronglySigned: (kind, d) => signWith(secretOf(), fixture(FIXTURES[kind], d)),
    timestamps: true,
    bodySigned: true,
  },
  (ctx) => {
    it('takes any v1 signature of the list (secret rotation) and the Standard Webhooks header names', async () => {
      const d = await ctx.sent();
      const req = signWith(SECRET, fixture(FIXTURES.delivery, d));
      const rotated = { ...req.headers, 'svix-signature': `v1,${signWith(secretOf(), req.payload).headers['svix-signature']?.slice(3)} ${req.headers['svix-signature']}` };
      expect((await ctx.post({ payload: req.payload, headers: rotated })).statusCode).toBe(200);
      expect((await ctx.state(d)).status).toBe('DELIVERED');
      const e = await ctx.sent();
      const std = signWith(SECRET, fixture(FIXTURES.bounce, e));
      const headers = { 'webhook-id': std.headers['svix-id'] ?? '', 'webhook-timestamp': std.headers['svix-timestamp'] ?? '', 'webhook-signature': std.headers['svix-signature'] ?? '' };
      expect((await ctx.post({ payload: std.payload, headers })).statusCode).toBe(200);
      expect((await ctx.state(e)).status).toBe('BOUNCED');
    });

    it('email.delivery_delayed notes the delay without a status change', async () => {
      const d = await ctx.sent();
      const res = await ctx.post(signWith(SECRET, fixture(FIXTURES.delivery, d).replace('email.delivered', 'email.delivery_delayed')));
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toMatchObject({ status: 'SENT', events: ['email.sent'] });
      const row = await ctx.t.db.db.selectFrom('emails').select('error').where('id', '=', d.emailId).executeTakeFirstOrThrow();
      expect(row.error).toMatch(/^Delivery delayed/);
    });
  },
);
