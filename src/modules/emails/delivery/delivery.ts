import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.js';
import type { SecretBox } from '../../../lib/secret-box.js';
import type { Tokens } from '../../../lib/tokens.js';
import { domainOf } from '../../../mail/address.js';
import { prepareForDelivery } from '../../../mail/compliance.js';
import { dkimSign } from '../../../mail/dkim.js';
import { HTML_DEPTH_RULE, htmlDepth, MAX_HTML_DEPTH } from '../../../mail/html-depth.js';
import { buildMime } from '../../../mail/mime.js';
import { htmlToText } from '../../../mail/render.js';
import type { MailTransport } from '../../../mail/transports/index.js';
import { classifySmtpError } from '../../../mail/transports/smtp.js';
import { type DkimKey, loadDkimKey, loadInstanceDkimKey } from '../../domains/index.js';
import { restartInterrupted } from '../delivery-stage.repo.js';
import { type DeliveryEmail, findAttachments, markCancelled, markFailed, releaseToPending } from '../emails.repo.js';
import { captureAndMarkSent } from '../outbox.repo.js';
import { createDeliveryBatches } from './batches.js';
import { countOutcome, recordSent, recordSmtpError } from './metrics.js';
import { personaliseCampaignEmail } from './personalise.js';
import { createProjectThrottle, type SendingRates } from './throttle.js';

/**
 * Delivery of one email: load, compose (tracking, compliance headers, text part, MIME), DKIM
 * sign, then hand to the relay (or the capture outbox), recording the outcome.
 *
 * Exactly once: the email is marked SENDING in a committed statement (shared with the deliveries
 * that reach that step together: batches.ts) before the relay
 * is contacted, its end-of-data stage is committed right before the message's final dot, and
 * it is SENT after the 250. A caught transient failure puts it back to PENDING before the job
 * is retried, so an email found in SENDING was interrupted (the worker or the database died).
 * Without the stage the dot never went out: the relay cannot have it, it is sent again. With
 * it the relay may have it: SENT, `unconfirmed`, never sent again (docs/sending.md: at most
 * once over at least once, for that last round trip only).
 */

/** The note on an email whose attempt was interrupted after its final dot, before the relay's reply was recorded. */
export const UNCONFIRMED_NOTE =
  'Delivery unconfirmed: interrupted after the end of the message was sent, before the relay\'s reply was recorded; not sent again to avoid a duplicate';
/** The note on an email whose connection failed after its final dot, without a reply (followed by the reason). */
export const NO_REPLY_NOTE = 'Delivery unconfirmed: no reply from the relay after the end of the message; not sent again to avoid a duplicate';
/** The note on an email sent again because an attempt was interrupted before its final dot. */
export const RESENT_NOTE = 'An earlier attempt was interrupted before the end of the message (the relay cannot have it): sent again';

/** A throttled email waiting up to this long sleeps in its job; longer waits are rescheduled. */
const MAX_THROTTLE_SLEEP_MS = 100;
/** Sender keys are re-read this often: a domain that lost its verification stops signing within it. */
const KEY_CACHE_MS = 30_000;

export interface DeliveryDeps {
  db: Kysely<Database>;
  tokens: Tokens;
  publicUrl: string;
  mail: MailTransport;
  /** Opens the sealed DKIM private keys (purpose `dkim`). */
  dkimBox: SecretBox;
  /** Per-project sending rates (docs/projects.md); the default falls back to SMTP_URL's `projectRate`. */
  sendingRates?: SendingRates;
  /**
   * The envelope sender (MAIL FROM, Return-Path) of an email: its VERP address on BOUNCE_DOMAIN
   * (src/modules/bounces, docs/bounces.md). Unset: the From address, as without a bounce domain.
   */
  returnPath?: (emailId: string) => string;
  /** Headers the relay's webhooks need to name an email (src/modules/webhooks relayHeadersOf); unset: none. */
  relayHeaders?: (emailId: string) => Record<string, string>;
  /** Where the shared statements of batches.ts run (a generic-plan pool: JobDeps.deliveryDb); unset: `db`. */
  batchDb?: Kysely<Database>;
}

export interface DeliveryJob {
  emailId: string;
  /** This run's attempt, from 1 (graphile-worker's job.attempts). */
  attempt: number;
  maxAttempts: number;
  /** The job was rescheduled by the throttle and holds its slot: do not throttle again. */
  reserved?: boolean;
}

export type DeliveryOutcome =
  | { kind: 'sent'; response: string }
  | { kind: 'captured'; duplicate: boolean }
  | { kind: 'unconfirmed'; note: string }
  | { kind: 'failed'; error: string }
  | { kind: 'skipped'; reason: string }
  | { kind: 'throttled'; runAt: Date };

/** Test hooks: stand-ins for a worker dying at a chosen point. */
export interface DeliveryHooks {
  /** Runs after the relay's 250, before SENT is recorded. */
  afterRelayAccepted?: () => void | Promise<void>;
}

/** The message cannot be built from its row (rendering, text part, MIME, signing): retrying would fail the same way. */
export class CompositionError extends Error {
  override readonly name = 'CompositionError';
}

/** A transient failure: the email is PENDING again and the job must be retried (graphile-worker's backoff). */
export class RetryableDeliveryError extends Error {
  override readonly name = 'RetryableDeliveryError';
}

export interface Delivery {
  deliver(job: DeliveryJob, hooks?: DeliveryHooks): Promise<DeliveryOutcome>;
  /** The last attempt ended in an unexpected error: a PENDING email, or a SENDING one before its end of data, becomes FAILED; one past it, unconfirmed. */
  giveUp(emailId: string, attempts: number, err: unknown): Promise<void>;
}

export function createDelivery(deps: DeliveryDeps): Delivery {
  const { db, mail } = deps;
  const throttle = createProjectThrottle(db, {
    default: deps.sendingRates?.default ?? mail.projectRatePerSecond,
    max: deps.sendingRates?.max,
  });
  const keys = new Map<string, { key: DkimKey | undefined; until: number }>();
  // The statements of deliveries running at once are shared (batches.ts).
  const batches = createDeliveryBatches(deps.batchDb ?? db);

  /** The project's key of its sender domain; for SYSTEM emails, the key of whichever project verified SYSTEM_FROM's domain. */
  async function senderKey(email: DeliveryEmail): Promise<DkimKey | undefined> {
    const domain = domainOf(email.fromEmail);
    const id = `${email.projectId ?? '(instance)'}:${domain}`;
    const cached = keys.get(id);
    if (cached && cached.until > Date.now()) return cached.key;
    const key =
      email.projectId === null ? await loadInstanceDkimKey(db, deps.dkimBox, domain) : await loadDkimKey(db, deps.dkimBox, email.projectId, domain);
    if (keys.size > 1000) keys.clear();
    if (key) keys.set(id, { key, until: Date.now() + KEY_CACHE_MS });
    return key;
  }

  /**
   * The signed message. Loading the attachments may fail transiently (thrown, retried); every
   * step after it is computed from the row alone, so its failure would repeat on every attempt:
   * it is thrown as a CompositionError naming the step, and the email becomes FAILED at once.
   */
  async function compose(email: DeliveryEmail, key: DkimKey | undefined): Promise<Buffer> {
    const attachments = email.attachmentSetId ? await findAttachments(db, email.attachmentSetId) : [];
    let step = 'tracking and compliance';
    try {
      // SYSTEM emails (no project) are never tracked and carry no subscription links.
      const prepared =
        email.projectId === null
          ? { html: email.html, headers: {} }
          : prepareForDelivery(
              email.html,
              { emailId: email.id, projectId: email.projectId, contactId: email.contactId, type: email.type, tracking: email.tracking },
              { tokens: deps.tokens, publicUrl: deps.publicUrl },
            );
      // The API refuses deeper HTML (html-depth.ts); a row that holds it anyway (stored before the
      // limit, or deepened by a {{{raw}}} value) is refused here by the same rule, not half-sent.
      step = 'HTML nesting';
      const depth = htmlDepth(prepared.html); // HTML_DEPTH_RULE.ok, measured once for the text part too
      if (depth > MAX_HTML_DEPTH) throw new Error(HTML_DEPTH_RULE.message);
      step = 'text part';
      const text = email.text ?? htmlToText(prepared.html, depth);
      step = 'MIME message';
      const raw = await buildMime({
        from: { address: email.fromEmail, name: email.fromName },
        to: { address: email.toEmail, name: email.toName },
        replyTo: email.replyTo,
        subject: email.subject,
        html: prepared.html,
        text,
        messageId: email.messageId,
        date: new Date(),
        headers: email.headers,
        preparedHeaders: email.projectId === null ? prepared.headers : { ...prepared.headers, ...deps.relayHeaders?.(email.id) },
        attachments,
      });
      step = 'DKIM signature';
      return key ? dkimSign(raw, key) : raw;
    } catch (err) {
      const why = !(err instanceof Error) ? String(err) : err.name === 'Error' ? err.message : `${err.name}: ${err.message}`;
      throw new CompositionError(`Not sent: the message could not be composed (${step}): ${why.slice(0, 300)}`, { cause: err });
    }
  }

  async function fail(emailId: string, error: string): Promise<DeliveryOutcome> {
    await markFailed(db, emailId, error);
    return { kind: 'failed', error };
  }

  async function unconfirmed(email: DeliveryEmail, note: string, subject?: string): Promise<DeliveryOutcome> {
    await batches.sent({ emailId: email.id, messageId: email.messageId, note, unconfirmed: true, subject });
    return { kind: 'unconfirmed', note };
  }

  async function deliver(job: DeliveryJob, hooks: DeliveryHooks = {}): Promise<DeliveryOutcome> {
    let email = await batches.load(job.emailId);
    if (!email) return { kind: 'skipped', reason: 'no such email' };
    if (email.status === 'SENDING') {
      // An interrupted attempt: its end-of-data stage says whether the relay can have the message.
      if (email.endOfDataAt) return unconfirmed(email, UNCONFIRMED_NOTE);
      if (!(await restartInterrupted(db, email.id, email.attempts, RESENT_NOTE))) return { kind: 'skipped', reason: 'changed meanwhile' };
      email = { ...email, status: 'PENDING', error: RESENT_NOTE };
    }
    if (email.status !== 'PENDING') return { kind: 'skipped', reason: `status is ${email.status}` };
    // Suppressed since it was queued (bounce, complaint, manual entry): never sent, whatever its type.
    if (email.suppressed !== null) {
      await markCancelled(db, email.id, email.suppressed);
      return { kind: 'skipped', reason: email.suppressed };
    }
    if (email.projectDisabled) return fail(email.id, 'Not sent: the project is disabled');
    // Campaign emails hold the campaign's templates: rendered now with the contact's current data.
    const personal =
      email.recipient && email.projectId !== null
        ? await personaliseCampaignEmail(db, { ...email, projectId: email.projectId, recipient: email.recipient }, deps)
        : undefined;
    if (personal?.kind === 'cancelled') return { kind: 'skipped', reason: personal.reason };
    if (personal) email = { ...email, subject: personal.subject, html: personal.html };
    // Stored with the SENT milestone, so every read (the email, the contact's emails, webhooks) shows what was sent.
    const renderedSubject = personal ? email.subject : undefined;

    // The per-project rate is a project's: the instance's own mail (no project) is not held by it.
    const wait = job.reserved || email.projectId === null ? 0 : await throttle.reserve(email.projectId, email.sendingRate);
    if (wait > MAX_THROTTLE_SLEEP_MS) return { kind: 'throttled', runAt: new Date(Date.now() + wait) };
    if (wait > 0) await sleep(wait);

    const key = await senderKey(email);
    // A project's mail is only sent signed by its verified domain; the instance's own mail goes out
    // unsigned until an operator verifies SYSTEM_FROM's domain (a person waits for it).
    if (!key && email.projectId !== null) {
      return fail(email.id, `Not sent: the sender domain ${domainOf(email.fromEmail)} is no longer verified for this project`);
    }
    let raw: Buffer;
    try {
      raw = await compose(email, key);
    } catch (err) {
      if (err instanceof CompositionError) return fail(email.id, err.message);
      throw err;
    }
    // The visible From stays the sender's; bounces go to the email's VERP address when there is a bounce domain.
    const envelope = { from: deps.returnPath?.(email.id) ?? email.fromEmail, to: email.toEmail };

    if (mail.kind === 'capture') {
      const result = await captureAndMarkSent(db, {
        projectId: email.projectId,
        emailId: email.id,
        messageId: email.messageId,
        envelopeFrom: envelope.from,
        envelopeTo: envelope.to,
        subject: email.subject,
        personalised: renderedSubject !== undefined,
        raw,
      });
      if (result === 'captured') recordSent(email);
      return result === 'skipped' ? { kind: 'skipped', reason: 'no longer pending' } : { kind: 'captured', duplicate: result === 'already' };
    }

    // SENDING only once a relay connection is ours: the window in which a dying worker leaves an
    // email unconfirmed is the SMTP transaction itself, not the wait for a connection.
    const release = await mail.smtp.reserve();
    let response: string;
    try {
      const attempt = await batches.sending(email.id);
      if (attempt === undefined) return { kind: 'skipped', reason: 'no longer pending' };
      const emailId = email.id;
      let fenced = false;
      // Committed before the final dot goes out; if the email is no longer this attempt's
      // (another run took it over), the dot is withheld and the transaction aborted.
      const beforeEndOfData = async () => {
        if (await batches.endOfData(emailId, attempt)) return;
        fenced = true;
        throw new Error('The email is no longer in this attempt: end of data withheld');
      };
      try {
        response = (await mail.smtp.send(raw, envelope, { beforeEndOfData })).response;
      } catch (err) {
        if (fenced) return { kind: 'skipped', reason: 'taken over by another attempt' };
        const smtp = classifySmtpError(err);
        recordSmtpError(smtp);
        // The dot went out and no reply came back (connection lost, timeout): the relay may have it.
        if (smtp.endOfDataSent && smtp.responseCode === undefined) return await unconfirmed(email, `${NO_REPLY_NOTE} (${smtp.message})`, renderedSubject);
        if (smtp.permanent) return await fail(email.id, smtp.message);
        if (job.attempt >= job.maxAttempts) return await fail(email.id, `Gave up after ${job.attempt} attempts: ${smtp.message}`);
        await releaseToPending(db, email.id, smtp.message);
        throw new RetryableDeliveryError(smtp.message, { cause: err });
      }
    } finally {
      release();
    }
    await hooks.afterRelayAccepted?.();
    if (await batches.sent({ emailId: email.id, messageId: email.messageId, note: email.error === null ? undefined : null, subject: renderedSubject })) recordSent(email);
    return { kind: 'sent', response };
  }

  return {
    deliver: (job, hooks) => countOutcome(deliver(job, hooks), (err) => err instanceof RetryableDeliveryError),
    async giveUp(emailId, attempts, err) {
      const message = err instanceof Error ? err.message : String(err);
      // The error may have cut an attempt short (e.g. the database failed around the SMTP
      // transaction): no job is left to settle a SENDING email, so it is settled here by its stage.
      const email = await batches.load(emailId);
      if (email?.status === 'SENDING' && email.endOfDataAt) await unconfirmed(email, UNCONFIRMED_NOTE);
      else await markFailed(db, emailId, `Gave up after ${attempts} attempts: ${message}`, ['PENDING', 'SENDING']);
    },
  };
}
