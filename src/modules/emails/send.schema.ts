import { z } from 'zod';
import { HTML_DEPTH_RULE, MAX_HTML_DEPTH } from '../../mail/html-depth.js';
import { RequestDataInput } from '../contacts/index.js';

/** Recipients per request (each gets its own contact upsert, rendering and email). */
export const MAX_RECIPIENTS = 50;
/** SPEC Limits: attachments per email and their decoded total. */
export const MAX_ATTACHMENTS = 10;
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** SPEC Limits: a whole message (body and decoded attachments). */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;
/** JSON body limit of the route: a 40 MB message with base64 attachments (4/3) and some room. */
export const SEND_BODY_LIMIT = 56 * 1024 * 1024;
/** RFC 5322 line limit: subject and custom header values. */
const MAX_LINE = 998;

/**
 * Headers the service writes itself; a caller's copy would duplicate or contradict them
 * (sender identity, threading of the message itself, MIME structure, signatures, compliance).
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'mime-version',
  'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id', 'dkim-signature',
  'list-unsubscribe', 'list-unsubscribe-post', 'return-path', 'received', 'authentication-results',
  'arc-seal', 'arc-message-signature', 'arc-authentication-results',
]);
/**
 * Headers a caller may not set although the service does not write them: they make receiving
 * systems resend, or send bounces or read receipts, to an address of the caller's choosing.
 * `Resent-*` is refused as a prefix (Resent-From, Resent-To, Resent-Date…).
 */
const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set(['errors-to', 'disposition-notification-to']);
const isForbiddenHeader = (lower: string) => FORBIDDEN_HEADERS.has(lower) || lower.startsWith('resent-');
/** Control characters other than tab (CR/LF would inject headers; the others corrupt them). */
const CONTROL_BUT_TAB = /(?!\t)\p{Cc}/u;
const MAX_HEADERS = 50;
/** RFC 5322 field name: printable ASCII except the colon. */
const HEADER_NAME = /^[!-9;-~]{1,100}$/;
const NEWLINE = /[\r\n]/;
const hasNul = (s: string) => s.includes('\u0000');
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

const issue = (code: string, message: string, path: (string | number)[] = []) =>
  ({ code: 'custom', message, path, params: { code } }) as const;

const EmailAddress = z.email();
function patternOf(schema: z.ZodEmail): RegExp {
  const pattern = (schema._zod.def as { pattern?: unknown }).pattern;
  if (!(pattern instanceof RegExp) || pattern.global || pattern.sticky) throw new Error('z.email() has no plain pattern: update send.schema.ts');
  return pattern;
}
const EMAIL_PATTERN = patternOf(EmailAddress);
/** The pattern of `z.email()` itself (what it tests, without a parse): the two cannot disagree. */
export const emailPattern = (): RegExp => EMAIL_PATTERN;

/** `ada@example.com` or `Ada Lovelace <ada@example.com>` (`"Ada, L." <…>` too). Linear: no regex backtracking. */
export function parseMailbox(value: string): { name?: string; email: string } | undefined {
  const v = value.trim();
  if (v.length > 512) return undefined;
  let email = v;
  let name = '';
  if (v.endsWith('>')) {
    const lt = v.lastIndexOf('<');
    if (lt === -1) return undefined;
    email = v.slice(lt + 1, -1).trim();
    name = v.slice(0, lt).trim();
    if (name.length >= 2 && name.startsWith('"') && name.endsWith('"')) name = name.slice(1, -1).trim();
    if (/["<>\r\n]/.test(name)) return undefined;
  }
  if (email.length > 254 || !EMAIL_PATTERN.test(email)) return undefined;
  return name ? { name, email } : { email };
}

const MailboxString = z
  .string()
  .max(512)
  .superRefine((v, ctx) => {
    if (!parseMailbox(v)) ctx.addIssue(issue('invalid_string', 'Invalid email address (expected "ada@example.com" or "Ada <ada@example.com>")'));
  })
  .describe('An address, optionally with a display name: "Ada <ada@example.com>"');

const DisplayName = z
  .string()
  .max(256)
  .refine((v) => !NEWLINE.test(v) && !hasNul(v), { message: 'Names must not contain newline or NUL characters', params: { code: 'invalid_string' } });

const MailboxObject = z.object({ name: DisplayName.optional(), email: z.email().max(254) });
const Mailbox = z.union([MailboxString, MailboxObject]);

const Subject = z
  .string()
  .min(1)
  .max(MAX_LINE)
  .superRefine((v, ctx) => {
    if (NEWLINE.test(v)) ctx.addIssue(issue('invalid_string', 'Subject must not contain newline characters'));
    else if (hasNul(v)) ctx.addIssue(issue('invalid_string', 'Subject must not contain NUL characters'));
  });

/**
 * The last path component of an attachment filename, for either separator: a recipient's client
 * that honours a folder in Content-Disposition must never be steered outside its download folder.
 */
export const fileBasename = (filename: string): string => filename.slice(Math.max(filename.lastIndexOf('/'), filename.lastIndexOf('\\')) + 1);

const Attachment = z.object({
  filename: z
    .string()
    .min(1)
    .max(255)
    .refine((v) => !/\p{Cc}/u.test(v), { message: 'Filename must not contain control characters', params: { code: 'invalid_string' } })
    .transform(fileBasename)
    .refine((v) => v !== '' && v !== '.' && v !== '..', { message: 'Filename must name a file (it is kept without its folders)', params: { code: 'invalid_string' } })
    .describe('Sent without any folder part: "../../etc/passwd" and "C:\\docs\\a.pdf" become "passwd" and "a.pdf"'),
  content: z
    .string()
    .refine((v) => v.length % 4 === 0 && BASE64.test(v), { message: 'Content must be base64', params: { code: 'invalid_string' } })
    .describe('Base64 of the file'),
  contentType: z
    .string()
    .max(255)
    .regex(/^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/, 'Expected a MIME type such as image/png'),
  cid: z
    .string()
    .regex(/^[^\s<>"()]{1,255}$/, 'Content-ID without spaces or <>')
    .optional()
    .describe('Makes the attachment an inline image, referenced in the body as <img src="cid:…">'),
});
export type AttachmentInput = z.infer<typeof Attachment>;

const Headers = z
  .record(z.string(), z.string())
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_HEADERS) ctx.addIssue(issue('too_big', `At most ${MAX_HEADERS} headers`));
    for (const [name, value] of Object.entries(headers)) {
      if (!HEADER_NAME.test(name)) {
        ctx.addIssue(issue('invalid_string', 'Header names are 1 to 100 printable ASCII characters, without spaces, colons or newlines', [name]));
      } else if (RESERVED_HEADERS.has(name.toLowerCase())) {
        ctx.addIssue(issue('reserved_header', `The ${name} header is set by the service`, [name]));
      } else if (isForbiddenHeader(name.toLowerCase())) {
        ctx.addIssue(issue('forbidden_header', `The ${name} header is not allowed: it redirects resends, bounces or read receipts`, [name]));
      } else if (value.length > MAX_LINE) {
        ctx.addIssue(issue('too_big', `Header values are at most ${MAX_LINE} characters`, [name]));
      } else if (CONTROL_BUT_TAB.test(value)) {
        ctx.addIssue(issue('invalid_string', 'Header values must not contain control characters other than tab (no newlines, no NUL)', [name]));
      }
    }
  })
  .describe(
    'Extra headers; names are printable ASCII, values up to 998 characters without control characters other than tab; headers the service sets, Resent-*, Errors-To and Disposition-Notification-To are refused',
  );

/** Decoded size of a (valid) base64 string. */
export const base64Bytes = (b64: string): number => (b64.length / 4) * 3 - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0);

export const SendBody = z
  .object({
    to: z
      .union([
        MailboxString,
        MailboxObject,
        // .max() inside a union reads as invalid_union in zod 4; a refinement keeps the too_big code.
        z
          .array(Mailbox)
          .min(1)
          .refine((list) => list.length <= MAX_RECIPIENTS, { message: `At most ${MAX_RECIPIENTS} recipients`, params: { code: 'too_big' } }),
      ])
      .describe(`One recipient, or 1 to ${MAX_RECIPIENTS}; each gets its own contact and email (a repeated address is sent once)`),
    subject: Subject.optional().describe('1 to 998 characters, no newlines; required without a template'),
    body: z.string().min(1).optional().describe(`HTML with {{variables}}, elements nested at most ${MAX_HTML_DEPTH} deep; required without a template`),
    template: z.uuid().optional().describe("A template of the project: its subject, body, sender, reply-to and type"),
    from: Mailbox.optional().describe('Sender on a verified domain; required unless the template has one'),
    name: DisplayName.optional().describe('Deprecated: sender name when `from` is an address without a name'),
    subscribed: z.boolean().optional().describe('New contacts default to false here; existing ones keep their state unless given'),
    data: RequestDataInput.optional(),
    headers: Headers.optional(),
    reply: z.email().max(254).optional().describe('Reply-To address'),
    type: z.enum(['html']).optional().describe("Plunk clients' body type: `html` (the only one; markdown is not rendered)"),
    attachments: z.array(Attachment).max(MAX_ATTACHMENTS).optional().describe(`At most ${MAX_ATTACHMENTS}, 10 MB decoded in total`),
  })
  .superRefine((b, ctx) => {
    if (!b.template) {
      if (b.subject === undefined) ctx.addIssue(issue('invalid_type', 'Required without a template', ['subject']));
      if (b.body === undefined) ctx.addIssue(issue('invalid_type', 'Required without a template', ['body']));
      if (b.from === undefined) ctx.addIssue(issue('invalid_type', 'Required without a template', ['from']));
    }
    if (b.body !== undefined && hasNul(b.body)) ctx.addIssue(issue('invalid_string', 'Body must not contain NUL characters', ['body']));
    if (b.body !== undefined && !HTML_DEPTH_RULE.ok(b.body)) ctx.addIssue(issue(HTML_DEPTH_RULE.code, HTML_DEPTH_RULE.message, ['body']));
    const attachmentBytes = (b.attachments ?? []).reduce((n, a) => n + base64Bytes(a.content), 0);
    if (attachmentBytes > MAX_ATTACHMENT_BYTES) {
      ctx.addIssue(issue('too_big', `Attachments are at most ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MB in total (decoded)`, ['attachments']));
    }
    if (attachmentBytes + Buffer.byteLength(b.body ?? '') > MAX_MESSAGE_BYTES) {
      ctx.addIssue(issue('too_big', `A message is at most ${MAX_MESSAGE_BYTES / 1024 / 1024} MB`, ['body']));
    }
    for (const [key, raw] of Object.entries(b.data ?? {})) {
      const value = raw !== null && typeof raw === 'object' ? raw.value : raw;
      if (hasNul(key) || (typeof value === 'string' && hasNul(value))) {
        ctx.addIssue(issue('invalid_string', 'Data must not contain NUL characters', ['data', key]));
      }
    }
  })
  .meta({
    id: 'SendBody',
    examples: [
      {
        to: 'ada@example.com',
        from: 'Example <hello@example.com>',
        subject: 'Welcome, {{firstName ?? "there"}}',
        body: '<p>Thanks for signing up to the {{plan}} plan.</p>',
        data: { firstName: 'Ada', plan: 'pro' },
      },
    ],
  });
export type SendBody = z.infer<typeof SendBody>;

export const SendResponse = z
  .object({
    success: z.literal(true),
    data: z.object({
      emails: z.array(
        z.object({
          contact: z.object({ id: z.uuid(), email: z.string() }),
          email: z.uuid().describe('Id of the email'),
        }),
      ),
      timestamp: z.iso.datetime(),
    }),
  })
  .meta({
    id: 'SendResponse',
    examples: [
      {
        success: true,
        data: {
          emails: [{ contact: { id: '0b8f5f0e-2c1d-4c43-9a57-3c2a4f1d7e10', email: 'ada@example.com' }, email: '6a1f7c2e-91b4-4d0a-8f3e-5b2c9d7e4a21' }],
          timestamp: '2026-01-01T12:00:00.000Z',
        },
      },
    ],
  });
export type SendResponse = z.infer<typeof SendResponse>;
