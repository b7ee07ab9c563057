import { ENHANCED_CODE, REPLY_CODE, classifyStatus, statusInText } from './status.js';
import type { BounceReport } from './report.js';

/**
 * Bounces in prose, without a delivery-status part: the formats of Gmail/Google, Microsoft
 * (Outlook.com, Exchange, Office 365), Yahoo, Exim, qmail and other MTAs that write the
 * remote server's reply into a text. A message is read as one only when it looks like a bounce
 * (sent by a mailer daemon or postmaster, or a bounce's subject) AND its text states a status
 * code or a well-known failure phrase.
 */

const DAEMON_SENDER = /^(mailer-daemon|mail-daemon|postmaster|mailer|mdaemon|bounces?)(@|$)/i;
const BOUNCE_SUBJECT =
  /(undeliver|undelivered|delivery status notification|delivery (has )?failed|delivery failure|mail delivery (failed|failure|subsystem|system)|returned mail|failure notice|returned to sender|could not be delivered|non-?delivery|nondeliverable|message not delivered|delivery problem|delayed mail|delivery delayed|delivery (notification|incomplete)|warning: could not send)/i;
const DELAY_SUBJECT = /(\(delay\)|delayed mail|delivery delayed|warning: could not send|still being retried|delivery incomplete)/i;
const DELAY_TEXT = /(has not (yet )?been delivered|will (continue|keep) (to )?(try|retry)|still (being )?(retried|trying)|delivery (is|has been) delayed|temporarily deferred and will)/i;

/** Lines that carry the remote server's reply in the formats above. */
const REPLY_LINE = /(smtp|said|remote (mail )?server|returned|diagnostic|error|reason|status|rejected|refused|#\d\.\d|\bdd\b|\d{3}[ -]\d\.\d)/i;

const PHRASES: { re: RegExp; status: string }[] = [
  { re: /(user unknown|unknown (user|recipient)|no such (user|mailbox|recipient)|does ?n[o']t exist|doesn't have an? [\w.-]+ account|mailbox (is )?unavailable|mailbox not found|recipient not found|recipientnotfound|address rejected|invalid (recipient|mailbox)|no mailbox here)/i, status: '5.1.1' },
  { re: /(mailbox (is )?full|over ?quota|quota exceeded|insufficient (storage|space))/i, status: '4.2.2' },
];

function diagnosticLine(lines: string[], status: string): string | undefined {
  const withCode = lines.find((l) => l.includes(status) || REPLY_CODE.test(l));
  return withCode?.trim().slice(0, 1000);
}

/** The bounce a prose message states, or undefined when it is not one. */
export function parseTextBounce(input: { from: string; subject: string; text: string }): (BounceReport & { format: string }) | undefined {
  const looksLike = DAEMON_SENDER.test(input.from) || BOUNCE_SUBJECT.test(input.subject);
  if (!looksLike) return undefined;
  // The text before the returned message: the quoted original may hold any code at all.
  const text = input.text.split(/\n-{2,}\s*(original message|below this line is a copy|this is a copy of the message)|\n------ This is a copy of the message|\nOriginal message headers:/i)[0] ?? '';
  const lines = text.split(/\r?\n/).slice(0, 400);
  const replyLines = lines.filter((l) => REPLY_LINE.test(l) && (ENHANCED_CODE.test(l) || REPLY_CODE.test(l)));
  let status = statusInText(replyLines.join('\n')) ?? statusInText(lines.filter((l) => ENHANCED_CODE.test(l)).join('\n'));
  let diagnosticCode = status ? diagnosticLine(replyLines.length > 0 ? replyLines : lines, status.startsWith('5.0') || status.startsWith('4.0') ? '' : status) : undefined;
  if (!status) {
    const phrase = PHRASES.find((p) => p.re.test(text));
    if (!phrase) return undefined;
    status = phrase.status;
    diagnosticCode = lines.find((l) => phrase.re.test(l))?.trim().slice(0, 1000);
  }
  const format = formatOf(input.from, text);
  const delayed = DELAY_SUBJECT.test(input.subject) || DELAY_TEXT.test(text);
  if (delayed && !status.startsWith('5')) return { kind: 'delayed', status, subType: 'Delayed', diagnosticCode, format };
  const verdict = classifyStatus(status);
  if (!verdict) return undefined;
  return { kind: verdict.kind, status, subType: verdict.subType, diagnosticCode, format };
}

/** Which receiver's format a prose bounce is (for the record; the reading is the same). */
function formatOf(from: string, text: string): string {
  if (/googlemail\.com|google\.com|gmail/i.test(from) || /Delivery to the following recipient(s)? failed|Google tried to deliver/i.test(text)) return 'gmail';
  if (/outlook\.com|hotmail|microsoft|exchange/i.test(from) || /Delivery has failed to these recipients|Diagnostic information for administrators|RESOLVER\./i.test(text)) return 'microsoft';
  if (/yahoo|aol\.com/i.test(from) || /Sorry, we were unable to deliver your message/i.test(text)) return 'yahoo';
  if (/qmail-send program/i.test(text)) return 'qmail';
  if (/Mail delivery failed|This message was created automatically by mail delivery software/i.test(text)) return 'exim';
  if (/This is the mail system at host/i.test(text)) return 'postfix';
  return 'text';
}
