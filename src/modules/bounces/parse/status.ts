/**
 * What a delivery status code means for the address (RFC 3463 enhanced codes, RFC 5321 reply
 * codes): docs/bounces.md "Hard or soft".
 */

export type BounceKind = 'hard-bounce' | 'soft-bounce';

export interface StatusVerdict {
  kind: BounceKind;
  /** SES's vocabulary, so events look alike whatever the source: NoEmail, MailboxFull, Blocked, General. */
  subType: string;
}

/** An enhanced status code (`5.1.1`) anywhere in a text, not part of an IP address or a version. */
export const ENHANCED_CODE = /(?<![\w.])([245])\.(\d{1,3})\.(\d{1,3})(?!\.?\d)/;
/** A basic SMTP reply code at the start of a reply (`550 `, `550-`, `554:`). */
export const REPLY_CODE = /(?<![\w.#-])([45]\d\d)(?=[ :-])/;

/**
 * 5.x.x is permanent, except a full mailbox (5.2.2, a state of the mailbox) and policy refusals
 * (5.7.x: blocked as spam, by a blocklist, by authentication policy: a verdict on the sender, not
 * on the address), which are soft: suppressing a working address for our own reputation's sake
 * would lose it. 4.x.x is soft. Answers undefined for a success (2.x.x) or garbage.
 */
export function classifyStatus(status: string): StatusVerdict | undefined {
  const m = /^([245])\.(\d{1,3})\.(\d{1,3})$/.exec(status.trim());
  if (!m) return undefined;
  const [cls, subject, detail] = [m[1], Number(m[2]), Number(m[3])];
  if (cls === '2') return undefined;
  if (subject === 2 && detail === 2) return { kind: 'soft-bounce', subType: 'MailboxFull' };
  if (subject === 7) return { kind: 'soft-bounce', subType: 'Blocked' };
  if (cls === '4') return { kind: 'soft-bounce', subType: 'General' };
  return { kind: 'hard-bounce', subType: subject === 1 ? 'NoEmail' : 'General' };
}

/** The enhanced code a text states, else one implied by its basic reply code (550 → 5.0.0). */
export function statusInText(text: string): string | undefined {
  const enhanced = ENHANCED_CODE.exec(text);
  if (enhanced) return `${enhanced[1]}.${enhanced[2]}.${enhanced[3]}`;
  const reply = REPLY_CODE.exec(text);
  return reply ? `${reply[1]?.[0]}.0.0` : undefined;
}
