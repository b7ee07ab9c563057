import { createHmac, randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { describeProvider, fixture, type Kind, nowSeconds, type SignedRequest } from './providers-setup.js';

/** Mailgun: hex HMAC-SHA256(signing key, timestamp + token) in the body's `signature`. */
const KEY = `key-${randomBytes(16).toString('hex')}`;
const FIXTURES: Record<Kind, string> = { bounce: 'mailgun-failed-permanent.json', complaint: 'mailgun-complained.json', delivery: 'mailgun-delivered.json' };

function signed(key: string, name: string, d: Parameters<typeof fixture>[1], opts: { at?: number; token?: string; extra?: Record<string, string> } = {}): SignedRequest {
  const timestamp = String(opts.at ?? nowSeconds());
  const token = opts.token ?? randomBytes(25).toString('hex');
  const signature = createHmac('sha256', key).update(timestamp + token).digest('hex');
  return { payload: fixture(name, d, { TIMESTAMP: timestamp, TOKEN: token, SIGNATURE: signature, ...opts.extra }), headers: {} };
}

describeProvider(
  {
    name: 'Mailgun',
    env: { MAILGUN_WEBHOOK_SIGNING_KEY: KEY },
    signed: (kind, d, opts) => signed(KEY, FIXTURES[kind], d, opts),
    unsigned: (req) => {
      const body = JSON.parse(req.payload) as Record<string, unknown>;
      delete body.signature;
      return { payload: JSON.stringify(body), headers: {} };
    },
    wronglySigned: (kind, d) => signed(`key-${randomBytes(16).toString('hex')}`, FIXTURES[kind], d),
    timestamps: true,
    bodySigned: false,
  },
  (ctx) => {
    it('a used token cannot carry another event (the signature covers the token, not the body)', async () => {
      const d = await ctx.sent();
      const token = randomBytes(25).toString('hex');
      expect((await ctx.post(signed(KEY, FIXTURES.delivery, d, { token }))).statusCode).toBe(200);
      // The same timestamp, token and signature on a forged bounce: a replay, nothing applied.
      const forged = signed(KEY, FIXTURES.bounce, d, { token, at: Number(JSON.parse(signed(KEY, FIXTURES.delivery, d, { token }).payload).signature.timestamp) });
      const res = await ctx.post(forged);
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toEqual({ status: 'DELIVERED', events: ['email.delivery', 'email.sent'], subscribed: true, suppression: undefined });
    });

    it('a temporary failure is a soft bounce: noted, counted, nothing suppressed', async () => {
      const d = await ctx.sent();
      const req = signed(KEY, FIXTURES.bounce, d);
      const res = await ctx.post({ ...req, payload: req.payload.replace('"severity": "permanent"', '"severity": "temporary"') });
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toMatchObject({ status: 'SENT', subscribed: true, suppression: undefined });
      const row = await ctx.t.db.db.selectFrom('emails').select('error').where('id', '=', d.emailId).executeTakeFirstOrThrow();
      expect(row.error).toMatch(/^Soft bounce: Transient: bounce: 550 5\.1\.1/);
    });
  },
);
