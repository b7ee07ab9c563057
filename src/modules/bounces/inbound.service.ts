import { createHash } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { findEmailsByIds } from '../emails/index.js';
import { applyFeedbackBatchIn, checkReputations, type FeedbackEvent, type Logger, type Outcome } from './feedback.service.js';
import { type InboundFeedbackRow, insertInboundFeedback } from './inbound.repo.js';
import { type Classification, classifyMessage, type ParsedMessage } from './parse/classify.js';

/** A message the receiver accepted: its bytes, its envelope, and the emails its VERP recipients name. */
export interface ReceivedMessage {
  /** The message, or its first {@link MAX_READ_BYTES} when larger. */
  raw: Buffer;
  /** The whole message's size in bytes (default: raw's). */
  size?: number;
  remoteAddress: string;
  helo: string | null;
  mailFrom: string;
  /** Each accepted RCPT TO with the email id its verified VERP address names. */
  recipients: readonly { address: string; emailId: string }[];
}

export interface ProcessResult {
  classification: Classification;
  outcomes: Outcome[];
}

/** The feedback event a classification maps to; undefined for auto-replies and other mail (kept, ignored). */
export function feedbackEventOf(c: Classification, reportKey: string): FeedbackEvent | undefined {
  const source = { source: 'inbound-smtp' };
  if (c.kind === 'complaint') {
    return { kind: 'complaint', data: compact({ complaintFeedbackType: c.feedbackType, userAgent: c.userAgent, format: c.format, ...source }) };
  }
  if (c.kind === 'auto-reply' || c.kind === 'other') return undefined;
  const data = compact({
    bounceType: c.kind === 'hard-bounce' ? 'Permanent' : 'Transient',
    bounceSubType: c.subType,
    status: c.status,
    diagnosticCode: c.diagnosticCode,
    action: c.action,
    remoteMta: c.remoteMta,
    format: c.format,
    ...source,
  });
  if (c.kind === 'delayed') return { kind: 'delay', data };
  return { kind: 'bounce', permanent: c.kind === 'hard-bounce', reportKey, data };
}

const compact = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));

/**
 * Names a report so that a replay is recognised: its Message-ID (an MTA retrying after a
 * temporary failure sends the same one), else the digest of its bytes.
 */
export function reportKeyOf(raw: Buffer, messageId: string | undefined): string {
  return messageId ? `msgid:${messageId}` : `sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

/** A received message with what it is, ready to apply (parsing happens outside any transaction). */
export interface ClassifiedMessage extends ReceivedMessage {
  parsed: ParsedMessage;
  /** What the feedback path is told; undefined for auto-replies and other mail (stored, ignored). */
  event: FeedbackEvent | undefined;
}

export async function classifyReceived(msg: ReceivedMessage): Promise<ClassifiedMessage> {
  const parsed = await classifyMessage(msg.raw);
  return { ...msg, parsed, event: feedbackEventOf(parsed.classification, reportKeyOf(msg.raw, parsed.messageId)) };
}

/**
 * Applies classified messages, in the caller's transaction: each to the emails its recipients
 * name, through the shared feedback path, then stores every message with its result (one
 * statement). Answers each message's outcomes (auto-replies and other mail: none).
 */
export async function applyReceivedIn(
  trx: Transaction<Database>,
  items: readonly ClassifiedMessage[],
  log: Logger,
  opts: { autoDisable: boolean; /** False for a replay of a stored report (the CLI): nothing new is stored. */ store?: boolean },
): Promise<Outcome[][]> {
  // One query for every email of the batch, one reputation check per project after all its reports.
  const emails = await findEmailsByIds(trx, [...new Set(items.flatMap((m) => m.recipients.map((r) => r.emailId)))]);
  const deferReputation = new Set<string>();
  // Every report of the batch through the feedback path at once: its milestones, events,
  // unsubscribes and suppressions are a few statements per batch (docs/bounces.md "Throughput").
  const outcomes = await applyFeedbackBatchIn(
    trx,
    items.flatMap((msg) => (msg.event ? msg.recipients.map((rcpt) => ({ email: emails.get(rcpt.emailId), event: msg.event as FeedbackEvent })) : [])),
    log,
    { ...opts, deferReputation },
  );
  let next = 0;
  const rows: InboundFeedbackRow[] = [];
  const answers: Outcome[][] = [];
  for (const msg of items) {
    const c = msg.parsed.classification;
    const results: Outcome[] = [];
    for (const rcpt of msg.recipients) {
      const outcome = msg.event ? outcomes[next++] : undefined;
      if (outcome) results.push(outcome);
      rows.push({
        projectId: emails.get(rcpt.emailId)?.project_id ?? null,
        emailId: rcpt.emailId,
        remoteAddress: msg.remoteAddress,
        helo: msg.helo,
        mailFrom: msg.mailFrom,
        rcptTo: rcpt.address,
        messageId: msg.parsed.messageId ?? null,
        raw: msg.raw,
        size: msg.size ?? msg.raw.length,
        kind: c.kind,
        result: { ...c, subject: msg.parsed.subject, from: msg.parsed.from },
        outcome: outcome ?? 'ignored',
      });
    }
    answers.push(results);
  }
  if (opts.store !== false) await insertInboundFeedback(trx, rows);
  await checkReputations(trx, deferReputation, log, opts);
  return answers;
}

/**
 * Classifies one received message and applies it in a transaction of its own: a failure leaves
 * nothing behind, a replay changes nothing (the receiver batches instead: receiver.ts).
 */
export async function processReceived(db: Kysely<Database>, msg: ReceivedMessage, log: Logger, opts: { autoDisable: boolean }): Promise<ProcessResult> {
  const classified = await classifyReceived(msg);
  const [outcomes = []] = await db.transaction().execute((trx) => applyReceivedIn(trx, [classified], log, opts));
  return { classification: classified.parsed.classification, outcomes };
}
