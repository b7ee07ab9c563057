import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { ProviderWebhookSecrets } from '../../../config.js';
import type { Database } from '../../../db/schema.js';
import { ApiError, ErrorCode } from '../../../http/errors.js';
import { applyFeedback, type EmailRef } from '../../bounces/index.js';
import { type FeedbackEmail, findEmailByMessageIds, findEmailsByIds } from '../../emails/index.js';
import type { ProviderEvent } from './events.js';
import { parseMailgun } from './mailgun.js';
import { parsePostmark } from './postmark.js';
import { parseResend } from './resend.js';
import { parseSendgrid } from './sendgrid.js';
import { checkMailgun, checkPostmark, checkSendgrid, checkSvix, createReplayMemory, sendgridKey } from './verify.js';

/**
 * The relay providers' webhooks on POST /webhooks/notifications besides SES through SNS
 * (docs/bounces.md, Provider webhooks): which provider sent a request, its signature, and its
 * events through the shared feedback path.
 */

export const PROVIDERS = ['ses', 'postmark', 'mailgun', 'sendgrid', 'resend'] as const;
export type Provider = (typeof PROVIDERS)[number];

const NAMES: Record<Exclude<Provider, 'ses'>, string> = { postmark: 'Postmark', mailgun: 'Mailgun', sendgrid: 'SendGrid', resend: 'Resend' };

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** The body as JSON, or undefined. */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * The provider of a request: `?provider=` when given; else its signature headers (SNS, SendGrid,
 * Svix); else the body's shape (a JSON array: SendGrid; `event-data`/`signature`: Mailgun;
 * `RecordType`: Postmark; `type: "email.*"` with `data`: Resend); else SES (SNS), as before.
 */
export function detectProvider(request: FastifyRequest, body: unknown): Provider {
  const query = (request.query ?? {}) as Record<string, unknown>;
  if (query.provider !== undefined) {
    const asked = String(query.provider).toLowerCase();
    if (!(PROVIDERS as readonly string[]).includes(asked)) throw new ApiError(400, ErrorCode.BAD_REQUEST, `Unknown provider "${asked}" (expected one of ${PROVIDERS.join(', ')})`);
    return asked as Provider;
  }
  const h = request.headers;
  if (h['x-amz-sns-message-type']) return 'ses';
  if (h['x-twilio-email-event-webhook-signature'] || h['x-twilio-email-event-webhook-timestamp']) return 'sendgrid';
  if (h['svix-id'] || h['svix-signature'] || h['webhook-signature']) return 'resend';
  if (Array.isArray(body)) return 'sendgrid';
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if ('event-data' in b || (b.signature && typeof b.signature === 'object')) return 'mailgun';
    if (typeof b.RecordType === 'string') return 'postmark';
    if (typeof b.type === 'string' && b.type.startsWith('email.') && b.data && typeof b.data === 'object') return 'resend';
  }
  return 'ses';
}

/** The project email an event names (SYSTEM emails are not found), read through the emails facade. */
async function findEmail(db: Kysely<Database>, ref: EmailRef): Promise<FeedbackEmail | undefined> {
  if ('email' in ref) return ref.email;
  return db.transaction().execute(async (trx) => ('emailId' in ref ? (await findEmailsByIds(trx, [ref.emailId])).get(ref.emailId) : findEmailByMessageIds(trx, ref.messageIds)));
}

export interface ProviderOptions {
  secrets: ProviderWebhookSecrets;
  autoDisable: boolean;
  /** The clock (tests). */
  now?: () => number;
}

/** Handles one request of a provider other than SES; answers what the route returns. */
export function createProviderHandler(db: Kysely<Database>, opts: ProviderOptions) {
  const now = opts.now ?? Date.now;
  const replays = createReplayMemory();
  const sgKey = opts.secrets.sendgridPublicKey ? sendgridKey(opts.secrets.sendgridPublicKey) : undefined;

  function refuse(log: FastifyBaseLogger, provider: Provider, reason: string): never {
    log.warn({ provider, reason }, 'provider webhook refused');
    throw new ApiError(403, ErrorCode.FORBIDDEN, `Invalid ${NAMES[provider as Exclude<Provider, 'ses'>]} webhook signature: ${reason}`);
  }
  function unconfigured(provider: Exclude<Provider, 'ses'>, variable: string): never {
    throw new ApiError(403, ErrorCode.FORBIDDEN, `${NAMES[provider]} webhooks are not accepted: set ${variable} on the server`);
  }

  /** Verifies the request; answers its events and the replay key to remember once they are applied. */
  function authenticate(provider: Exclude<Provider, 'ses'>, request: FastifyRequest, raw: Buffer, body: unknown): { events: ProviderEvent[]; replayKey?: string } {
    const h = request.headers;
    const at = now();
    const log = request.log;
    switch (provider) {
      case 'postmark': {
        const creds = opts.secrets.postmark ?? unconfigured(provider, 'POSTMARK_WEBHOOK_USER and POSTMARK_WEBHOOK_PASSWORD, or POSTMARK_WEBHOOK_HEADER');
        const reason = checkPostmark(h, creds);
        if (reason) refuse(log, provider, reason);
        return { events: parsePostmark(body) };
      }
      case 'mailgun': {
        const key = opts.secrets.mailgunSigningKey ?? unconfigured(provider, 'MAILGUN_WEBHOOK_SIGNING_KEY');
        const sig = (body && typeof body === 'object' ? (body as Record<string, unknown>).signature : undefined) as Parameters<typeof checkMailgun>[0];
        const reason = checkMailgun(sig, key, at);
        if (reason) refuse(log, provider, reason);
        return { events: parseMailgun(body), replayKey: `mailgun:${String(sig?.token)}` };
      }
      case 'sendgrid': {
        const key = sgKey ?? unconfigured(provider, 'SENDGRID_WEBHOOK_PUBLIC_KEY');
        const signature = first(h['x-twilio-email-event-webhook-signature']);
        const reason = checkSendgrid({ signature, timestamp: first(h['x-twilio-email-event-webhook-timestamp']) }, raw, key, at);
        if (reason) refuse(log, provider, reason);
        return { events: parseSendgrid(body), replayKey: `sendgrid:${signature}` };
      }
      case 'resend': {
        const secret = opts.secrets.resendSecret ?? unconfigured(provider, 'RESEND_WEBHOOK_SECRET');
        const id = first(h['svix-id']) ?? first(h['webhook-id']);
        const reason = checkSvix(
          { id, timestamp: first(h['svix-timestamp']) ?? first(h['webhook-timestamp']), signature: first(h['svix-signature']) ?? first(h['webhook-signature']) },
          raw,
          secret,
          at,
        );
        if (reason) refuse(log, provider, reason);
        return { events: parseResend(body, id ?? ''), replayKey: `svix:${id}` };
      }
    }
  }

  return async function handleProvider(provider: Exclude<Provider, 'ses'>, request: FastifyRequest, raw: Buffer, body: unknown): Promise<{ received: true }> {
    const { events, replayKey } = authenticate(provider, request, raw, body);
    const log = request.log.child({ provider });
    if (body === undefined) throw new ApiError(400, ErrorCode.BAD_REQUEST, `Body is not a ${NAMES[provider]} webhook (JSON expected)`);
    if (replayKey && replays.has(replayKey, now())) {
      log.info({ replayKey }, 'provider webhook already applied: replay ignored');
      return { received: true };
    }
    for (const event of events) {
      if ('ignored' in event) {
        log.info({ reason: event.ignored }, 'provider event ignored');
        continue;
      }
      const { ref, recipients, ...feedback } = event;
      const email = await findEmail(db, ref);
      // Metadata and quoted headers can be set by whoever sends: the email must also be to the event's recipient.
      if (email && recipients.length > 0 && !recipients.includes(email.to_email.toLowerCase())) {
        log.warn({ ref, recipients, emailId: email.id }, 'provider event names an email of another recipient: ignored');
        continue;
      }
      const outcome = await applyFeedback(db, { email }, feedback, log, { autoDisable: opts.autoDisable });
      log.info({ kind: feedback.kind, outcome, ref }, 'provider event applied');
    }
    if (replayKey) replays.add(replayKey, now());
    return { received: true };
  };
}
