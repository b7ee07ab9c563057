import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { applyFeedbackIn, type FeedbackEvent, type Logger, type Outcome } from './feedback.service.js';
import { type InboundFeedbackRow, insertInboundFeedback, projectsOfEmails } from './inbound.repo.js';
import { type Classification, classifyMessage } from './parse/classify.js';

/** A message the receiver accepted: its bytes, its envelope, and the emails its VERP recipients name. */
export interface ReceivedMessage {
  raw: Buffer;
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

/**
 * Classifies a received message and applies it to each email its recipients name through the
 * shared feedback path, storing it with the result, all in one transaction: a failure leaves
 * nothing behind (the receiver answers 451 and the sender retries), a replay changes nothing.
 */
export async function processReceived(db: Kysely<Database>, msg: ReceivedMessage, log: Logger, opts: { autoDisable: boolean }): Promise<ProcessResult> {
  const parsed = await classifyMessage(msg.raw);
  const c = parsed.classification;
  const event = feedbackEventOf(c, reportKeyOf(msg.raw, parsed.messageId));
  const outcomes = await db.transaction().execute(async (trx) => {
    const projects = await projectsOfEmails(trx, msg.recipients.map((r) => r.emailId));
    const rows: InboundFeedbackRow[] = [];
    const results: Outcome[] = [];
    for (const rcpt of msg.recipients) {
      // At most a handful of recipients per message (the receiver caps them).
      const outcome = event ? await applyFeedbackIn(trx, { emailId: rcpt.emailId }, event, log, opts) : undefined;
      if (outcome) results.push(outcome);
      rows.push({
        projectId: projects.get(rcpt.emailId) ?? null,
        emailId: rcpt.emailId,
        remoteAddress: msg.remoteAddress,
        helo: msg.helo,
        mailFrom: msg.mailFrom,
        rcptTo: rcpt.address,
        messageId: parsed.messageId ?? null,
        raw: msg.raw,
        kind: c.kind,
        result: { ...c, subject: parsed.subject, from: parsed.from },
        outcome: outcome ?? 'ignored',
      });
    }
    await insertInboundFeedback(trx, rows);
    return results;
  });
  return { classification: c, outcomes };
}
