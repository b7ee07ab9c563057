import { type MimePart, parseFields, walkParts } from './mime.js';
import { classifyStatus, statusInText } from './status.js';

/**
 * Machine-readable reports: delivery status notifications (RFC 3464) and feedback reports
 * (ARF, RFC 5965), each the second part of a multipart/report (RFC 6522).
 */

export interface BounceReport {
  kind: 'hard-bounce' | 'soft-bounce' | 'delayed';
  /** The enhanced status code (RFC 3463). */
  status: string;
  subType: string;
  action?: string;
  diagnosticCode?: string;
  recipient?: string;
  remoteMta?: string;
  reportingMta?: string;
}

export interface ComplaintReport {
  kind: 'complaint';
  feedbackType: string;
  userAgent?: string;
  originalRecipient?: string;
  sourceIp?: string;
}

const cut = (v: string | undefined, n = 1000) => (v === undefined ? undefined : v.slice(0, n));
/** `rfc822; bob@example.org` → `bob@example.org`. */
const typed = (v: string | undefined) => cut(v?.replace(/^[\w-]+\s*;\s*/, '').replace(/^<(.*)>$/, '$1').trim(), 320);

/** The blocks of a delivery-status body: per-message fields, then one block per recipient. */
function blocks(text: string): Map<string, string>[] {
  return text
    .split(/\r?\n[ \t]*\r?\n/)
    .map((b) => parseFields(b))
    .filter((f) => f.size > 0);
}

/**
 * The DSN of a message/delivery-status part: the recipient block that failed (else delayed);
 * undefined when every recipient was delivered, relayed or expanded (nothing to act on).
 */
export function parseDeliveryStatus(part: MimePart): BounceReport | { other: string } {
  const [perMessage, ...recipients] = blocks(part.body.toString('utf8'));
  const pick = recipients.find((r) => r.get('action')?.toLowerCase() === 'failed') ?? recipients.find((r) => r.get('action')?.toLowerCase() === 'delayed');
  if (!pick) return { other: `delivery-status report with no failed or delayed recipient (${recipients.map((r) => r.get('action') ?? '?').join(', ') || 'none'})` };
  const action = pick.get('action')?.toLowerCase() ?? '';
  const diagnosticCode = cut(pick.get('diagnostic-code')?.replace(/^smtp\s*;\s*/i, ''));
  // Status is required by RFC 3464, yet some MTAs write a bare 5.0.0 and the real code in the diagnostic.
  let status = /^[245]\.\d{1,3}\.\d{1,3}/.exec(pick.get('status') ?? '')?.[0];
  if ((!status || /^[45]\.0\.0$/.test(status)) && diagnosticCode) status = statusInText(diagnosticCode) ?? status;
  status ??= action === 'delayed' ? '4.0.0' : '5.0.0';
  const common = {
    status,
    action,
    diagnosticCode,
    recipient: typed(pick.get('final-recipient') ?? pick.get('original-recipient')),
    remoteMta: typed(pick.get('remote-mta')),
    reportingMta: typed(perMessage?.get('reporting-mta')),
  };
  if (action === 'delayed') return { kind: 'delayed', subType: 'Delayed', ...common };
  const verdict = classifyStatus(status);
  if (!verdict) return { other: `failed recipient with a success status ${status}` };
  return { kind: verdict.kind, subType: verdict.subType, ...common };
}

/** Feedback types that are complaints; `not-spam` and `auth-failure` (RFC 6591) are not. */
const NOT_COMPLAINTS = new Set(['not-spam', 'auth-failure']);

/** The complaint of a message/feedback-report part (ARF). */
export function parseFeedbackReport(part: MimePart): ComplaintReport | { other: string } {
  const f = parseFields(part.body.toString('utf8'));
  const feedbackType = (f.get('feedback-type') ?? '').toLowerCase().slice(0, 100);
  if (!feedbackType) return { other: 'feedback report without Feedback-Type' };
  if (NOT_COMPLAINTS.has(feedbackType)) return { other: `feedback report of type ${feedbackType} (not a complaint)` };
  return {
    kind: 'complaint',
    feedbackType,
    userAgent: cut(f.get('user-agent'), 200),
    originalRecipient: typed(f.get('original-rcpt-to')),
    sourceIp: cut(f.get('source-ip'), 100),
  };
}

/** The first delivery-status or feedback-report part of a message, whatever the nesting. */
export function findReportPart(root: MimePart): MimePart | undefined {
  return walkParts(root).find((p) => p.type === 'message/delivery-status' || p.type === 'message/global-delivery-status' || p.type === 'message/feedback-report');
}
