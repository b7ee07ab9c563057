import { autoReplyReason } from './auto-reply.js';
import { parsePart } from './mime.js';
import { type BounceReport, type ComplaintReport, findReportPart, parseDeliveryStatus, parseFeedbackReport } from './report.js';
import { parseTextBounce } from './text-bounce.js';

/** What a message received at a VERP address is (docs/bounces.md "What is recognised"). */
export type Classification =
  | (BounceReport & { format: string })
  | (ComplaintReport & { format: 'arf' })
  | { kind: 'auto-reply'; reason: string }
  | { kind: 'other'; reason: string };

/** Fields of the message itself (for the record and the replay key). */
export interface ParsedMessage {
  classification: Classification;
  messageId: string | undefined;
  subject: string;
  from: string;
}

/**
 * Reads one received message, in this order: a multipart/report's delivery-status (RFC 3464) or
 * feedback-report (ARF, RFC 5965) part; else a bounce in prose (text-bounce.ts); else an
 * auto-reply (ignored); else `other` (kept, ignored).
 */
export async function classifyMessage(raw: Buffer): Promise<ParsedMessage> {
  const root = parsePart(raw);
  const headers = root.headers;
  const subject = decodeSubject(headers.get('subject') ?? '');
  const from = addressOf(headers.get('from') ?? '');
  const messageId = headers.get('message-id')?.trim().slice(0, 998) || undefined;
  const done = (classification: Classification): ParsedMessage => ({ classification, messageId, subject, from });

  const report = findReportPart(root);
  if (report) {
    const parsed = report.type === 'message/feedback-report' ? parseFeedbackReport(report) : parseDeliveryStatus(report);
    if ('other' in parsed) return done({ kind: 'other', reason: parsed.other });
    return done(parsed.kind === 'complaint' ? { ...parsed, format: 'arf' } : { ...parsed, format: 'rfc3464' });
  }
  // Prose: mailparser decodes charsets, transfer encodings and HTML-only bodies (loaded at the
  // first such report: ~5 MB of heap, docs/performance.md "Memory").
  const { simpleParser } = await import('mailparser');
  const mail = await simpleParser(raw, { skipHtmlToText: false, skipImageLinks: true, skipTextLinks: true, skipTextToHtml: true });
  const text = mail.text ?? '';
  const bounce = parseTextBounce({ from, subject: mail.subject ?? subject, text });
  if (bounce) return done(bounce);
  const auto = autoReplyReason(headers, mail.subject ?? subject);
  if (auto) return done({ kind: 'auto-reply', reason: auto });
  return done({ kind: 'other', reason: 'neither a delivery status notification, a feedback report, a bounce nor an auto-reply' });
}

/** The address in a From field (`Name <a@b>` → `a@b`). */
function addressOf(value: string): string {
  return (/<([^>]*)>/.exec(value)?.[1] ?? value).trim().toLowerCase().slice(0, 320);
}

/** RFC 2047 encoded words of a subject, decoded (B and Q; utf-8 or latin1). */
function decodeSubject(value: string): string {
  return value
    .replace(/=\?([\w-]+)\?([bq])\?([^?]*)\?=/gi, (_, charset: string, enc: string, data: string) => {
      const bytes = enc.toLowerCase() === 'b' ? Buffer.from(data, 'base64') : Buffer.from(data.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (__, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      return bytes.toString(/utf-?8/i.test(charset) ? 'utf8' : 'latin1');
    })
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 500);
}

