import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isRefused, normalizeEmail, upsertContactsChecked } from '../contacts/index.js';
import { insertEvents } from '../events/index.js';
import { type InboundFeedbackRow, insertInboundFeedback } from './inbound.repo.js';
import { reportKeyOf } from './inbound.service.js';
import { keepPrivateObjects, queuePrivateObjectDeletion } from '../uploads/index.js';
import { type AttachmentRecord, type AttachmentStoring, storeAttachments } from './inbound-mail.attachments.js';
import { attachmentKeysOf, findRepliedEmail, insertAttachments, insertInboundMessage, setInboundMessageEvent } from './inbound-mail.repo.js';
import { classifyMessage, type ParsedMessage } from './parse/classify.js';
import { parseReceivedMail, type ReceivedMail } from './parse/received.js';

/** The event a received message becomes on its sender's contact. */
export const RECEIVED_EVENT = 'email.received';
/** Characters of the text body the event's data carries (the whole body, up to 256 KB: inbound_messages). */
export const EVENT_TEXT_CHARS = 2_000;

/** A message the receiver accepted for addresses of projects' inbound domains. */
export interface InboundMail {
  raw: Buffer;
  /** The whole message's size in bytes (default: raw's). */
  size?: number;
  remoteAddress: string;
  helo: string | null;
  /** The envelope sender; '' for the null sender of a DSN. */
  mailFrom: string;
  /** Each accepted RCPT TO with the project whose domain receives it. */
  recipients: readonly { address: string; projectId: string }[];
}

/** What became of a message for each project it was sent to. */
export type InboundMailOutcome =
  | { projectId: string; outcome: 'received'; contactId: string; eventId: string; inboundMessageId: string }
  | { projectId: string; outcome: 'duplicate' | 'ignored'; reason: string };

const LOOP_MARKERS = ['hard-bounce', 'soft-bounce', 'delayed', 'complaint', 'auto-reply'];
const PLAUSIBLE_ADDRESS = /^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/;

/**
 * Why a message sent to an inbound address is not a received message, or undefined when it is:
 * a report (DSN, ARF), a bounce in prose, an auto-reply, or the null sender. Recording those as
 * email.received would let an out-of-office answer a workflow's email and trigger it again.
 */
function notAMessage(parsed: ParsedMessage, mailFrom: string): string | undefined {
  const kind = parsed.classification.kind;
  if (LOOP_MARKERS.includes(kind)) return `${kind} sent to an inbound address`;
  if (mailFrom === '') return 'null envelope sender (a notification, not a message)';
  return undefined;
}

/**
 * Records a received message (docs/bounces.md "Inbound mail"), in one transaction: for each
 * project it was sent to, the sender's contact upserted (created unsubscribed: writing to a
 * project is no consent to its mailings), the message stored (inbound_messages, bodies up to
 * 256 KB each), an `email.received` event on the contact with the parsed fields, linked to the
 * campaign email it replies to. Reports and auto-replies are stored in inbound_feedback and
 * ignored. A message delivered twice (same Message-ID, else same bytes) is recorded once.
 */
export async function processInboundMail(db: Kysely<Database>, msg: InboundMail, opts: { attachments?: AttachmentStoring } = {}): Promise<InboundMailOutcome[]> {
  const parsed = await classifyMessage(msg.raw);
  const ignoredBecause = notAMessage(parsed, msg.mailFrom);
  const mail = ignoredBecause ? undefined : await parseReceivedMail(msg.raw);
  const sender = mail ? senderOf(mail, msg.mailFrom) : undefined;
  const projects = [...new Set(msg.recipients.map((r) => r.projectId))];
  // INBOUND_STORE_ATTACHMENTS: each project's copy written before the transaction (kept by its commit).
  const stored = new Map<string, AttachmentRecord[]>();
  if (mail && sender && opts.attachments && mail.attachments.length > 0) {
    for (const projectId of projects) stored.set(projectId, await storeAttachments(db, opts.attachments, projectId, mail));
  }
  if (mail) mail.attachmentContents = [];
  return db.transaction().execute(async (trx) => {
    if (!mail || !sender) {
      const reason = ignoredBecause ?? 'no sender address';
      await storeIgnored(trx, msg, parsed, reason);
      return projects.map((projectId) => ({ projectId, outcome: 'ignored' as const, reason }));
    }
    const key = reportKeyOf(msg.raw, mail.messageId);
    const outcomes: InboundMailOutcome[] = [];
    // At most 10 recipients a message (receiver.ts): one project per domain, a handful at most.
    for (const projectId of projects) outcomes.push(await recordFor(trx, projectId, msg, mail, sender, key, stored.get(projectId)));
    return outcomes;
  });
}

/** The From address, else the envelope sender; undefined when neither is an address. */
function senderOf(mail: ReceivedMail, mailFrom: string): string | undefined {
  for (const candidate of [mail.from, mailFrom]) {
    const address = candidate ? normalizeEmail(candidate) : '';
    if (PLAUSIBLE_ADDRESS.test(address) && address.length <= 320) return address;
  }
  return undefined;
}

async function recordFor(
  trx: Transaction<Database>,
  projectId: string,
  msg: InboundMail,
  mail: ReceivedMail,
  sender: string,
  key: string,
  attachments: AttachmentRecord[] | undefined,
): Promise<InboundMailOutcome> {
  const [upserted] = await upsertContactsChecked(trx, projectId, [{ email: sender, patch: {}, subscribedIfNew: false }]);
  if (!upserted || isRefused(upserted)) return { projectId, outcome: 'ignored', reason: 'the sender cannot be a contact of this project' };
  const contactId = upserted.row.id;
  const replied = await findRepliedEmail(trx, projectId, mail.replyIds);
  const rcptTo = msg.recipients.filter((r) => r.projectId === projectId).map((r) => r.address);
  const inboundMessageId = await insertInboundMessage(trx, {
    projectId,
    messageKey: key,
    contactId,
    mailFrom: msg.mailFrom,
    rcptTo,
    from: sender,
    to: mail.to,
    cc: mail.cc,
    subject: mail.subject,
    messageId: mail.messageId ?? null,
    inReplyTo: mail.inReplyTo ?? null,
    campaignId: replied?.campaignId ?? null,
    emailId: replied?.id ?? null,
    text: mail.text,
    textTruncated: mail.textTruncated,
    html: mail.html ?? null,
    htmlTruncated: mail.htmlTruncated,
    attachments: mail.attachments,
    size: msg.size ?? msg.raw.length,
  });
  // A duplicate keeps none of its objects: the deletion queue removes them.
  if (!inboundMessageId) return { projectId, outcome: 'duplicate', reason: `already received (${key.slice(0, 80)})` };
  if (attachments) {
    await insertAttachments(trx, projectId, inboundMessageId, attachments);
    await keepPrivateObjects(trx, projectId, attachments.flatMap((a) => (a.key ? [a.key] : [])));
  }
  const text = mail.text.slice(0, EVENT_TEXT_CHARS);
  const data = compact({
    inboundMessageId,
    subject: mail.subject,
    from: sender,
    fromName: mail.fromName,
    to: mail.to,
    cc: mail.cc,
    recipients: rcptTo,
    messageId: mail.messageId,
    inReplyTo: mail.inReplyTo,
    text,
    textTruncated: text.length < mail.text.length || mail.textTruncated || undefined,
    hasHtml: mail.html !== undefined,
    attachments: mail.attachments,
    attachmentsOmitted: mail.attachmentsOmitted || undefined,
    size: msg.size ?? msg.raw.length,
    // A reply to one of the project's emails: the activity feed and webhooks name its campaign.
    emailId: replied?.id,
    campaignId: replied?.campaignId ?? undefined,
    reply: replied ? true : undefined,
  });
  const [event] = await insertEvents(trx, projectId, [{ contactId, name: RECEIVED_EVENT, data }]);
  if (!event) throw new Error('email.received: no event inserted');
  await setInboundMessageEvent(trx, inboundMessageId, event.id);
  return { projectId, outcome: 'received', contactId, eventId: event.id, inboundMessageId };
}

/** A report or auto-reply sent to an inbound address: kept for inspection like any report, applied to nothing. */
async function storeIgnored(trx: Transaction<Database>, msg: InboundMail, parsed: ParsedMessage, reason: string): Promise<void> {
  const c = parsed.classification;
  const rows: InboundFeedbackRow[] = msg.recipients.map((r) => ({
    projectId: r.projectId,
    emailId: null,
    remoteAddress: msg.remoteAddress,
    helo: msg.helo,
    mailFrom: msg.mailFrom,
    rcptTo: r.address,
    messageId: parsed.messageId ?? null,
    raw: msg.raw,
    size: msg.size ?? msg.raw.length,
    kind: c.kind,
    result: { ...c, subject: parsed.subject, from: parsed.from, inbound: true, ignored: reason },
    outcome: 'ignored',
  }));
  await insertInboundFeedback(trx, rows);
}

/**
 * Queues the removal of the project's stored attachments from storage, in the transaction of its
 * reset or deletion (src/modules/projects/lifecycle.repo.ts), before their rows go.
 */
export async function queueInboundAttachmentDeletion(trx: Transaction<Database>, projectId: string): Promise<number> {
  return queuePrivateObjectDeletion(trx, projectId, await attachmentKeysOf(trx, projectId));
}

const compact = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));
