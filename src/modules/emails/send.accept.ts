import { acceptContactData } from '../contacts/index.js';
import { HTML_DEPTH_RULE } from '../../mail/html-depth.js';
import { emailPattern, MAX_MESSAGE_BYTES, MAX_RECIPIENTS, parseMailbox, type SendBody } from './send.schema.js';

/**
 * The fast path of POST /v1/send's body validation: a body without a template, headers or
 * attachments, whose addresses are strings and whose fields are plainly valid, is accepted here
 * without zod (its parse of a typical body — the `to` and `from` unions, the `data` values tried
 * against each option of theirs — and the unknown-field walk cost ~30 µs of the API's CPU per
 * request, docs/performance.md). Anything else — any doubt — is left to SendBody, which judges it
 * and words the errors as before. It must accept only bodies SendBody accepts (with no unknown
 * field), with the value SendBody returns: test/modules/emails/send-accept.test.ts holds it to
 * that over a corpus of valid and invalid bodies.
 */

const FIELDS: ReadonlySet<string> = new Set(['to', 'from', 'subject', 'body', 'data', 'subscribed', 'reply', 'name', 'type']);
/** SendBody's limits of these fields (send.schema.ts). */
const MAX_LINE = 998;
const MAX_MAILBOX = 512;
const MAX_NAME = 256;
const MAX_EMAIL = 254;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
const hasNul = (text: string) => text.includes('\u0000');
const hasNewline = (text: string) => text.includes('\n') || text.includes('\r');

const acceptMailbox = (value: unknown): boolean => typeof value === 'string' && value.length <= MAX_MAILBOX && parseMailbox(value) !== undefined;

function acceptRecipients(to: unknown): boolean {
  if (!Array.isArray(to)) return acceptMailbox(to);
  if (to.length < 1 || to.length > MAX_RECIPIENTS) return false;
  for (const entry of to) if (!acceptMailbox(entry)) return false;
  return true;
}

function acceptBodyText(body: unknown): body is string {
  if (typeof body !== 'string' || body.length === 0 || hasNul(body)) return false;
  // A UTF-16 unit is at most 3 bytes of UTF-8: most bodies need no count.
  if (body.length * 3 > MAX_MESSAGE_BYTES && Buffer.byteLength(body) > MAX_MESSAGE_BYTES) return false;
  return HTML_DEPTH_RULE.ok(body);
}

/** The body as SendBody parses it when it is plainly valid; undefined to let the schema judge. */
export function acceptSendBody(input: unknown): SendBody | undefined {
  if (!isPlainObject(input)) return undefined;
  for (const key in input) if (!FIELDS.has(key)) return undefined;
  const { to, from, subject, body, data, subscribed, reply, name, type } = input;
  if (!acceptRecipients(to) || !acceptMailbox(from)) return undefined;
  if (typeof subject !== 'string' || subject.length < 1 || subject.length > MAX_LINE || hasNewline(subject) || hasNul(subject)) return undefined;
  if (!acceptBodyText(body)) return undefined;
  if (subscribed !== undefined && typeof subscribed !== 'boolean') return undefined;
  if (reply !== undefined && (typeof reply !== 'string' || reply.length > MAX_EMAIL || !emailPattern().test(reply))) return undefined;
  if (name !== undefined && (typeof name !== 'string' || name.length > MAX_NAME || hasNewline(name) || hasNul(name))) return undefined;
  if (type !== undefined && type !== 'html') return undefined;
  if (data !== undefined && !acceptContactData(data)) return undefined;
  return input as SendBody;
}
