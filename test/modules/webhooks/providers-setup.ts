import { randomBytes, randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../../helpers/envelope.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { type Delivered, deliver, eventsOf } from '../bounces/helpers.js';
import { createSendTestApp, newSender, type Sender, type SendTestApp } from '../emails/helpers.js';

/**
 * The shared cases of the provider webhook tests (providers-*.test.ts): each provider's signed
 * fixtures (test/fixtures/webhooks) about emails really sent through /v1/send to the SMTP sink,
 * posted to POST /webhooks/notifications.
 */

export type Kind = 'bounce' | 'complaint' | 'delivery';

/** A fixture with its placeholders filled from a delivered email. */
export function fixture(name: string, d: Delivered & { from: string }, vars: Record<string, string> = {}): string {
  const all: Record<string, string> = {
    MESSAGE_ID: d.messageId,
    MESSAGE_ID_BARE: d.messageId.replace(/^<(.*)>$/, '$1'),
    EMAIL_ID: d.emailId,
    RECIPIENT: d.to,
    FROM: d.from,
    REPORT_ID: randomUUID(),
    REPORT_NUMBER: String(Math.floor(Math.random() * 1e12)),
    ...vars,
  };
  let text = readFileSync(new URL(`../../fixtures/webhooks/${name}`, import.meta.url), 'utf8');
  for (const [key, value] of Object.entries(all)) text = text.replaceAll(`{{${key}}}`, JSON.stringify(value).slice(1, -1));
  return text;
}

export interface SignedRequest {
  headers: Record<string, string>;
  payload: string;
}

export interface ProviderKit {
  name: string;
  /** The server's variables holding this provider's secrets. */
  env: Record<string, string>;
  /** The signed request of a fixture of this kind about `d` (`at`: the signing time, seconds). */
  signed(kind: Kind, d: Delivered & { from: string }, opts?: { at?: number }): SignedRequest;
  /** The same request without its signature. */
  unsigned(req: SignedRequest): SignedRequest;
  /** The same request signed with another key. */
  wronglySigned(kind: Kind, d: Delivered & { from: string }): SignedRequest;
  /** False for Postmark (no signed timestamp). */
  timestamps: boolean;
  /** True when the signature covers the body (SendGrid, Resend; not Mailgun's timestamp + token, nor Postmark's credentials). */
  bodySigned: boolean;
}

export const nowSeconds = () => Math.floor(Date.now() / 1000);

export interface ProviderTestContext {
  t: SendTestApp;
  sender: Sender;
  post(req: SignedRequest, query?: string): Promise<LightMyRequestResponse>;
  sent(): Promise<Delivered & { from: string }>;
  /** The header block of the message the sink received for a sent email. */
  receivedHead(d: Delivered): string;
  state(d: Delivered): Promise<{ status: string; events: string[]; subscribed: boolean; suppression: string | undefined }>;
}

/** Starts the sink and the app with the kit's secrets; registers the cases every provider must pass. */
export function describeProvider(kit: ProviderKit, more?: (ctx: ProviderTestContext) => void): void {
  let sink: SmtpSink;
  let t: SendTestApp | undefined;
  let sender: Sender | undefined;
  beforeAll(async () => {
    sink = await startSmtpSink();
    t = await createSendTestApp({ env: { SMTP_URL: sink.url, ...kit.env } });
    await t.runWorker();
    sender = await newSender(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  const app = () => {
    if (!t || !sender) throw new Error('not started');
    return { t, sender };
  };
  const ctx: ProviderTestContext = {
    get t() {
      return app().t;
    },
    get sender() {
      return app().sender;
    },
    post: (req, query = '') =>
      app().t.app.inject({ method: 'POST', url: `/webhooks/notifications${query}`, headers: { 'content-type': 'application/json', ...req.headers }, payload: req.payload }),
    sent: async () => ({ ...(await deliver(app().t, sink, app().sender, `r${randomBytes(5).toString('hex')}@recipient.example`)), from: app().sender.from }),
    receivedHead: (d) => {
      const raw = sink.messagesTo(d.to).at(-1)?.raw ?? Buffer.alloc(0);
      return raw.subarray(0, Math.max(0, raw.indexOf('\r\n\r\n'))).toString('latin1');
    },
    state: async (d) => {
      const db = app().t.db.db;
      const email = await db.selectFrom('emails').select('status').where('id', '=', d.emailId).executeTakeFirstOrThrow();
      const events = await db.selectFrom('events').select('name').where('contact_id', '=', d.contactId).execute();
      const contact = await db.selectFrom('contacts').select('subscribed').where('id', '=', d.contactId).executeTakeFirstOrThrow();
      const suppression = await db.selectFrom('suppressions').select('reason').where('project_id', '=', app().sender.project.id).where('email', '=', d.to).executeTakeFirst();
      return { status: email.status, events: events.map((e) => e.name).sort(), subscribed: contact.subscribed, suppression: suppression?.reason };
    },
  };
  const untouched = { status: 'SENT', events: ['email.sent'], subscribed: true, suppression: undefined };

  describe(`${kit.name}: signed events about a sent email`, () => {
    it('hard bounce: BOUNCED, email.bounce, contact unsubscribed, address suppressed', async () => {
      const d = await ctx.sent();
      expect(await ctx.state(d)).toEqual(untouched);
      const res = await ctx.post(kit.signed('bounce', d));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ received: true });
      expect(await ctx.state(d)).toEqual({ status: 'BOUNCED', events: ['contact.unsubscribed', 'email.bounce', 'email.sent'], subscribed: false, suppression: 'HARD_BOUNCE' });
      const [event] = await eventsOf(ctx.t.db, d.contactId, 'email.bounce');
      expect(event?.data).toMatchObject({ emailId: d.emailId, provider: kit.name.toLowerCase(), bounceType: 'Permanent' });
    });

    it('complaint: COMPLAINED, email.complaint, contact unsubscribed, address suppressed', async () => {
      const d = await ctx.sent();
      const res = await ctx.post(kit.signed('complaint', d));
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toEqual({ status: 'COMPLAINED', events: ['contact.unsubscribed', 'email.complaint', 'email.sent'], subscribed: false, suppression: 'COMPLAINT' });
    });

    it('delivery: DELIVERED with email.delivery, nothing suppressed', async () => {
      const d = await ctx.sent();
      const res = await ctx.post(kit.signed('delivery', d));
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toEqual({ status: 'DELIVERED', events: ['email.delivery', 'email.sent'], subscribed: true, suppression: undefined });
    });

    it('a replay changes nothing (even for a contact who resubscribed since)', async () => {
      const d = await ctx.sent();
      const req = kit.signed('bounce', d);
      expect((await ctx.post(req)).statusCode).toBe(200);
      await ctx.t.db.db.updateTable('contacts').set({ subscribed: true }).where('id', '=', d.contactId).execute();
      const before = await ctx.state(d);
      const again = await ctx.post(req);
      expect(again.statusCode, again.body).toBe(200);
      expect(await ctx.state(d)).toEqual(before);
      expect(await eventsOf(ctx.t.db, d.contactId, 'email.bounce')).toHaveLength(1);
    });

    it('an event naming our email but another recipient is ignored with 200 (metadata and quoted headers can be set by any sender)', async () => {
      const d = await ctx.sent();
      for (const kind of ['bounce', 'complaint'] as const) {
        const res = await ctx.post(kit.signed(kind, { ...d, to: `someone-else-${randomBytes(3).toString('hex')}@recipient.example` }));
        expect(res.statusCode, res.body).toBe(200);
      }
      expect(await ctx.state(d)).toEqual(untouched);
    });

    it('an unknown Message-ID is ignored with 200', async () => {
      const d = await ctx.sent();
      const stranger = { ...d, messageId: `<${randomUUID()}@elsewhere.example>`, emailId: randomUUID() };
      const res = await ctx.post(kit.signed('bounce', stranger));
      expect(res.statusCode, res.body).toBe(200);
      expect(await ctx.state(d)).toEqual(untouched);
    });
  });

  describe(`${kit.name}: refusals change nothing`, () => {
    for (const kind of ['bounce', 'complaint', 'delivery'] as const) {
      it(`refuses the unsigned and the wrongly signed twin of a ${kind} with 403`, async () => {
        const d = await ctx.sent();
        for (const req of [kit.unsigned(kit.signed(kind, d)), kit.wronglySigned(kind, d)]) {
          const res = await ctx.post(req);
          expectEnvelope(res, 403, 'FORBIDDEN');
        }
        expect(await ctx.state(d)).toEqual(untouched);
      });
    }

    if (kit.bodySigned) {
      it('refuses a payload changed after signing', async () => {
        const d = await ctx.sent();
        const req = kit.signed('delivery', d);
        const res = await ctx.post({ ...req, payload: req.payload.replace('"delivered"', '"bounce"').replace('email.delivered', 'email.bounced') });
        expect(res.statusCode, res.body).toBe(403);
        expect(await ctx.state(d)).toEqual(untouched);
      });
    }

    if (kit.timestamps) {
      it('refuses a stale timestamp (signed 10 minutes ago)', async () => {
        const d = await ctx.sent();
        const res = await ctx.post(kit.signed('bounce', d, { at: nowSeconds() - 600 }));
        expect(res.statusCode, res.body).toBe(403);
        expect(res.json().error.message).toMatch(/timestamp/);
        expect(await ctx.state(d)).toEqual(untouched);
      });
    }
  });

  more?.(ctx);
}
