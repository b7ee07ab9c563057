import type { Kysely, Transaction } from 'kysely';
import type { BillingConfig } from '../../config.js';
import type { Database, DataValue, EmailType, StoredAttachment, TemplateRow, TrackingMode } from '../../db/schema.js';
import { ApiError, ErrorCode, notFound, validationError } from '../../http/errors.js';
import { claimIdempotencyKeys, idempotencyKeyReused, type KeyClaim } from '../../http/idempotency.js';
import type { Tokens } from '../../lib/tokens.js';
import { GroupCommit, GroupCommitClosedError, type Outcome, QueueFullError } from '../../lib/group-commit.js';
import { messageIdFor } from '../../mail/address.js';
import { renderForRecipient } from '../../mail/personalise.js';
import { enforceEmailCap } from '../billing/index.js';
import { normalizeEmail, resolveData, upsertContacts, type UpsertedContact } from '../contacts/index.js';
import { assertProjectCanSend } from '../accounts/index.js';
import { assertVerifiedSender } from '../domains/index.js';
import { findSuppressionNotes } from '../suppressions/index.js';
import { findTemplate } from '../templates/index.js';
import { allocateEmailIds, insertAttachmentSet, insertEmails, type NewEmail } from './emails.repo.js';
import { enqueueSendBatch } from './send-batches.repo.js';
import { blockedReason } from './rules.js';
import { MAX_MESSAGE_BYTES, parseMailbox, type SendBody } from './send.schema.js';

export interface SendDeps {
  db: Kysely<Database>;
  /** Where the checks and batches of each request run (generic-plan connections: AppDeps.hotDb); unset: `db`. */
  hotDb?: Kysely<Database>;
  tokens: Tokens;
  publicUrl: string;
  idempotencyTtlHours: number;
  /** Monthly caps (billing on); undefined: none. */
  billing?: BillingConfig;
}

export interface SendInput {
  projectId: string;
  /** The project's tracking setting (the links in the variables carry it). */
  tracking: TrackingMode;
  body: SendBody;
  /** The request's Idempotency-Key, claimed in the transaction that writes its emails. */
  idempotency?: KeyClaim;
}

export interface SendResult {
  emails: { contact: { id: string; email: string }; email: string }[];
  timestamp: string;
}


interface Mailbox {
  email: string;
  name: string | null;
}

/** A request checked and resolved before its transaction: template, sender, content, data. */
interface SendItem {
  projectId: string;
  tracking: TrackingMode;
  templateId: string | null;
  type: EmailType;
  sender: Mailbox;
  replyTo: string | null;
  subject: string;
  body: string;
  headers: Record<string, string>;
  attachments: StoredAttachment[];
  recipients: Mailbox[];
  subscribed: boolean | undefined;
  patch: Record<string, DataValue | null>;
  values: Record<string, DataValue>;
  claim: KeyClaim | undefined;
}

/** The item's Idempotency-Key was taken (by an earlier request, or one committed meanwhile). */
class KeyTaken extends Error {}

/** The sender: explicit `from` overrides the template's; the deprecated `name` only names a bare address. */
function resolveSender(b: SendBody, template: TemplateRow | undefined): Mailbox {
  if (typeof b.from === 'object') return { email: normalizeEmail(b.from.email), name: b.from.name || null };
  if (typeof b.from === 'string') {
    const parsed = parseMailbox(b.from);
    if (!parsed) throw validationError([{ field: 'from', message: 'Invalid email address', code: 'invalid_string' }]);
    return { email: normalizeEmail(parsed.email), name: parsed.name ?? (b.name || template?.from_name || null) };
  }
  if (template) return { email: normalizeEmail(template.from_email), name: b.name || template.from_name || null };
  throw validationError([{ field: 'from', message: 'Required without a template', code: 'invalid_type' }]);
}

/** Recipients in request order; an address repeated (in any case) is kept once, with its first name. */
function distinctRecipients(to: SendBody['to']): Mailbox[] {
  const seen = new Map<string, Mailbox>();
  for (const entry of Array.isArray(to) ? to : [to]) {
    const parsed = typeof entry === 'string' ? parseMailbox(entry) : entry;
    if (!parsed) throw validationError([{ field: 'to', message: 'Invalid email address', code: 'invalid_string' }]);
    const email = normalizeEmail(parsed.email);
    if (!seen.has(email)) seen.set(email, { email, name: parsed.name || null });
  }
  return [...seen.values()];
}

function required(value: string | undefined, field: 'subject' | 'body'): string {
  if (value) return value;
  throw validationError([{ field, message: `Required: the template has no ${field}`, code: 'invalid_type' }]);
}

/** Resolves a request (template, sender check: 404/403/422 before anything is written). */
async function prepare(db: Kysely<Database>, input: SendInput): Promise<SendItem> {
  const { projectId, body: b } = input;
  await assertProjectCanSend(db, projectId);
  const template = b.template ? await findTemplate(db, projectId, b.template) : undefined;
  if (b.template && !template) throw notFound('Template');
  const sender = resolveSender(b, template);
  await assertVerifiedSender(db, { projectId, fromEmail: sender.email, code: 'FORBIDDEN' });
  return {
    projectId,
    tracking: input.tracking,
    templateId: template?.id ?? null,
    // HEADLESS templates are delivered like TRANSACTIONAL ones (no subscription check, no footer).
    type: template?.type ?? 'TRANSACTIONAL',
    sender,
    replyTo: b.reply ?? template?.reply_to ?? null,
    subject: required(b.subject ?? template?.subject, 'subject'),
    body: required(b.body ?? template?.body, 'body'),
    headers: b.headers ?? {},
    attachments: (b.attachments ?? []).map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content, ...(a.cid && { cid: a.cid }) })),
    recipients: distinctRecipients(b.to),
    subscribed: b.subscribed,
    ...resolveData(b.data),
    claim: input.idempotency,
  };
}

/** Requests above this much content (body or attachments) never share a transaction with another such one. */
const LARGE_BYTES = 256 * 1024;

export interface Sender {
  /** Performs POST /v1/send; resolves once its emails and jobs are committed. */
  send(input: SendInput): Promise<SendResult>;
  /** Stops taking requests and writes every waiting one. */
  close(): Promise<void>;
}

/**
 * POST /v1/send. A request's writes commit in one transaction: its Idempotency-Key, each
 * recipient's contact upsert (new contacts unsubscribed unless `subscribed` says otherwise),
 * one rendered email per recipient with its Message-ID, its attachments (stored once), and
 * one send-batch job for the deliverable emails of the batch at transactional priority. Mail to
 * a suppressed address (any type), and MARKETING mail to an unsubscribed contact, is accepted
 * but CANCELLED with the reason, and not in the job. Requests of one project that
 * arrive within milliseconds share that transaction (group commit): every commit that
 * enqueues jobs takes PostgreSQL's NOTIFY lock, which otherwise caps acceptance at one
 * commit per WAL flush. A batch that fails is rerun request by request.
 */
export function createSender(deps: SendDeps): Sender {
  const hot = deps.hotDb ?? deps.db;
  const batcher = new GroupCommit<SendItem, SendResult>({
    metricName: 'send',
    maxBatchSize: 32,
    maxWaitMs: 2,
    maxInFlight: 4,
    maxInFlightPerGroup: 2,
    groupOf: (item) => item.projectId,
    // Per contact and per key, requests commit in arrival order; large ones go one per batch.
    keysOf: (item) => [
      ...item.recipients.map((r) => `to:${r.email}`),
      ...(item.claim ? [`key:${item.claim.key}`] : []),
      ...(item.attachments.length > 0 || item.body.length > LARGE_BYTES ? ['large'] : []),
    ],
    run: (projectId, items) => hot.transaction().execute((trx) => writeBatch(deps, trx, projectId, items)),
  });
  return {
    async send(input) {
      const item = await prepare(hot, input);
      try {
        return await batcher.submit(item);
      } catch (err) {
        if (err instanceof KeyTaken) throw await idempotencyKeyReused(deps.db, input.projectId, item.claim?.key ?? '');
        if (err instanceof QueueFullError || err instanceof GroupCommitClosedError) {
          throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, err.message, { headers: { 'Retry-After': '1' } });
        }
        throw err;
      }
    },
    close: () => batcher.close(),
  };
}

/** 503 for a request that was never performed (overload, shutdown): safe to retry with the same key. */
export const isNotPerformed = (err: unknown): boolean => err instanceof ApiError && err.code === ErrorCode.SERVICE_UNAVAILABLE;

/** One batch of requests of one project, set-based: one statement per table. */
async function writeBatch(deps: SendDeps, trx: Transaction<Database>, projectId: string, items: readonly SendItem[]): Promise<Outcome<SendResult>[]> {
  const claims = items.flatMap((i) => (i.claim ? [i.claim] : []));
  const claimed = await claimIdempotencyKeys(trx, projectId, claims, deps.idempotencyTtlHours);
  const accepted = items.filter((i) => !i.claim || claimed.has(i.claim.key));
  const pairs = accepted.flatMap((item) => item.recipients.map((recipient) => ({ item, recipient })));
  const contacts = await upsertContacts(
    trx,
    projectId,
    pairs.map(({ item, recipient }) => ({ email: recipient.email, patch: item.patch, subscribed: item.subscribed, subscribedIfNew: false })),
  );
  const ids = await allocateEmailIds(trx, pairs.length);
  // One query for the whole batch: a suppressed address gets its email row, CANCELLED with the reason.
  const suppressed = await findSuppressionNotes(trx, projectId, contacts.map((c) => c.row.email));
  const sets = new Map<SendItem, string>();
  for (const item of accepted) if (item.attachments.length > 0) sets.set(item, await insertAttachmentSet(trx, projectId, item.attachments));
  const rows = pairs.map(({ item, recipient }, n) => {
    const contact = at(contacts, n);
    return renderEmail(deps, item, recipient, contact, at(ids, n), sets.get(item) ?? null, suppressed.get(contact.row.email));
  });
  for (const item of accepted) checkSize(item, rows.filter((_, n) => pairs[n]?.item === item));
  // Over a cap: 402 and the batch rolls back (rerun request by request, so the others still go).
  await enforceEmailCap(trx, deps.billing, { projectId, category: 'transactional', count: rows.filter((r) => r.status === 'PENDING').length });
  await insertEmails(trx, rows);
  await enqueueSendBatch(trx, projectId, rows.filter((r) => r.status === 'PENDING').map((r) => r.id));

  const timestamp = new Date().toISOString();
  const results = new Map<SendItem, SendResult>(accepted.map((item) => [item, { emails: [], timestamp }]));
  pairs.forEach(({ item }, n) => {
    const contact = at(contacts, n).row;
    results.get(item)?.emails.push({ contact: { id: contact.id, email: contact.email }, email: at(rows, n).id });
  });
  return items.map((item) => {
    const value = results.get(item);
    return value ? { ok: true, value } : { ok: false, error: new KeyTaken() };
  });
}

/** 40 MB per email, and per request in total: throwing rolls the batch back (it is rerun without this request). */
function checkSize(item: SendItem, rows: readonly NewEmail[]): void {
  const attachmentBytes = item.attachments.reduce((n, a) => n + Buffer.byteLength(a.content, 'base64'), 0);
  const html = rows.map((r) => Buffer.byteLength(r.html) + Buffer.byteLength(r.subject));
  if (html.some((n) => n + attachmentBytes > MAX_MESSAGE_BYTES) || html.reduce((a, b) => a + b, 0) > MAX_MESSAGE_BYTES) {
    throw validationError([
      { field: 'body', message: `The rendered emails exceed ${MAX_MESSAGE_BYTES / 1024 / 1024} MB (per email, and in total per request)`, code: 'too_big' },
    ]);
  }
}

/**
 * One recipient's email: variables are the contact's data after the upsert, the request's one-off
 * values and the reserved ones. `suppressed`: the address's suppression note, if it has one.
 */
function renderEmail(
  deps: SendDeps,
  item: SendItem,
  recipient: Mailbox,
  contact: UpsertedContact,
  id: string,
  attachmentSetId: string | null,
  suppressed: string | undefined,
): NewEmail {
  const content = renderForRecipient(
    { subject: item.subject, html: item.body },
    { emailId: id, projectId: item.projectId, contactId: contact.row.id, email: contact.row.email, data: contact.row.data, values: item.values },
    deps,
  );
  const blocked = blockedReason(suppressed, item.type, contact.row.subscribed);
  return {
    id,
    projectId: item.projectId,
    contactId: contact.row.id,
    source: 'SEND',
    type: item.type,
    templateId: item.templateId,
    toEmail: contact.row.email,
    toName: recipient.name,
    fromEmail: item.sender.email,
    fromName: item.sender.name,
    replyTo: item.replyTo,
    ...content,
    headers: item.headers,
    attachmentSetId,
    messageId: messageIdFor(id, item.sender.email),
    status: blocked === null ? 'PENDING' : 'CANCELLED',
    error: blocked,
  };
}

function at<V>(list: readonly V[], index: number): V {
  const value = list[index];
  if (value === undefined) throw new Error(`send: no result at ${index}`);
  return value;
}
