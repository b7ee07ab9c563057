import type Mail from 'nodemailer/lib/mailer/index.js';
import { buildMimeFast } from './mime-fast.js';

/** An attachment as stored with the email (base64 content; `cid` makes it inline). */
export interface MimeAttachment {
  filename: string;
  contentType: string;
  cid?: string;
  content: string;
}

export interface Mailbox {
  address: string;
  name?: string | null;
}

/** Everything of one message, already rendered and prepared for delivery. */
export interface MimeInput {
  from: Mailbox;
  to: Mailbox;
  replyTo?: string | null;
  subject: string;
  html: string;
  text: string;
  /** `<id@domain>`, chosen when the email was accepted and kept on retries. */
  messageId: string;
  date: Date;
  /** The caller's headers (validated at acceptance): encoded and folded by nodemailer as needed. */
  headers?: Record<string, string>;
  /** Headers the service adds (List-Unsubscribe…): ASCII, written exactly as given. */
  preparedHeaders?: Record<string, string>;
  attachments?: readonly MimeAttachment[];
}

const mailbox = (m: Mailbox): Mail.Address | string => (m.name ? { name: m.name, address: m.address } : m.address);

/**
 * Builds the RFC 5322 message: multipart/alternative text and HTML, inline images (attachments
 * with a `cid`, referenced as `cid:` in the HTML) in multipart/related, other attachments in
 * multipart/mixed. A message without attachments is written directly (mime-fast.ts, the common
 * case of delivery); the others by nodemailer's MailComposer, which never reads files or URLs here.
 */
export async function buildMime(input: MimeInput): Promise<Buffer> {
  return buildMimeFast(input) ?? composeMime(input);
}

/** The message by nodemailer's MailComposer (every case, including the fast path's). */
export async function composeMime(input: MimeInput): Promise<Buffer> {
  const headers: Mail.Headers = { ...input.headers };
  for (const [key, value] of Object.entries(input.preparedHeaders ?? {})) headers[key] = { prepared: true, value };
  // Loaded at the first message with attachments (~2 MB of heap; docs/performance.md "Memory").
  const { default: MailComposer } = await import('nodemailer/lib/mail-composer/index.js');
  const composer = new MailComposer({
    from: mailbox(input.from),
    to: mailbox(input.to),
    ...(input.replyTo ? { replyTo: input.replyTo } : {}),
    subject: input.subject,
    html: input.html,
    text: input.text,
    messageId: input.messageId,
    date: input.date,
    headers,
    attachments: (input.attachments ?? []).map((a) => ({
      filename: a.filename,
      content: a.content,
      encoding: 'base64',
      contentType: a.contentType,
      ...(a.cid ? { cid: a.cid, contentDisposition: 'inline' as const } : { contentDisposition: 'attachment' as const }),
    })),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
