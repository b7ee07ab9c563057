import type { AddressObject } from 'mailparser';

/**
 * A message received for a project's inbound address, parsed (docs/bounces.md "Inbound mail"):
 * mailparser decodes charsets, transfer encodings and the MIME tree. Bodies are cut to
 * {@link MAX_BODY_BYTES} each (UTF-8), address lists to {@link MAX_ADDRESSES}, the attachments
 * listed to {@link MAX_ATTACHMENTS} (their decoded contents are returned; the caller stores them
 * or not: inbound-attachments.ts).
 */
export const MAX_BODY_BYTES = 256 * 1024;
export const MAX_ADDRESSES = 100;
export const MAX_ATTACHMENTS = 50;
/** References read from a reply's References header (the most recent ones). */
const MAX_REFERENCES = 20;

export interface AttachmentInfo {
  filename: string | null;
  contentType: string;
  size: number;
}

export interface ReceivedMail {
  subject: string;
  /** The From address, lower-cased; undefined when the header holds none. */
  from: string | undefined;
  fromName: string | undefined;
  to: string[];
  cc: string[];
  messageId: string | undefined;
  inReplyTo: string | undefined;
  /** In-Reply-To then the References, newest first, each `<…>`. */
  replyIds: string[];
  text: string;
  textTruncated: boolean;
  html: string | undefined;
  htmlTruncated: boolean;
  attachments: AttachmentInfo[];
  /** Attachments past {@link MAX_ATTACHMENTS}, counted only. */
  attachmentsOmitted: number;
  /** The decoded bytes of each listed attachment, in the order of `attachments` (kept only when INBOUND_STORE_ATTACHMENTS is on). */
  attachmentContents: Buffer[];
}

/** `s` cut to at most `bytes` bytes of UTF-8, never inside a character. */
export function cutUtf8(s: string, bytes: number): { value: string; truncated: boolean } {
  if (Buffer.byteLength(s) <= bytes) return { value: s, truncated: false };
  const value = Buffer.from(s).subarray(0, bytes).toString('utf8').replace(/\uFFFD+$/, '');
  return { value, truncated: true };
}

const addressesOf = (field: AddressObject | AddressObject[] | undefined): { address: string; name: string }[] =>
  (Array.isArray(field) ? field : field ? [field] : [])
    .flatMap((o) => o.value)
    .flatMap(function flat(a): { address: string; name: string }[] {
      if (a.group) return a.group.flatMap(flat);
      return a.address ? [{ address: a.address.trim().toLowerCase().slice(0, 320), name: a.name }] : [];
    });

const messageIds = (value: string | string[] | undefined): string[] =>
  (Array.isArray(value) ? value : value ? value.split(/\s+/) : []).map((v) => v.trim()).filter((v) => /^<[^<>\s]+>$/.test(v) && v.length <= 998);

export async function parseReceivedMail(raw: Buffer): Promise<ReceivedMail> {
  // Loaded at the first message: mailparser and its charset tables hold ~5 MB of heap (docs/performance.md "Memory").
  const { simpleParser } = await import('mailparser');
  const mail = await simpleParser(raw, { skipHtmlToText: false, skipImageLinks: true, skipTextLinks: true, skipTextToHtml: true });
  const [from] = addressesOf(mail.from);
  const text = cutUtf8(mail.text ?? '', MAX_BODY_BYTES);
  const html = typeof mail.html === 'string' ? cutUtf8(mail.html, MAX_BODY_BYTES) : undefined;
  const inReplyTo = messageIds(mail.inReplyTo)[0];
  const references = messageIds(mail.references).reverse().slice(0, MAX_REFERENCES);
  const listed = mail.attachments.slice(0, MAX_ATTACHMENTS);
  return {
    subject: (mail.subject ?? '').replace(/\s+/g, ' ').trim().slice(0, 998),
    from: from?.address,
    fromName: from?.name ? from.name.slice(0, 200) : undefined,
    to: addressesOf(mail.to).map((a) => a.address).slice(0, MAX_ADDRESSES),
    cc: addressesOf(mail.cc).map((a) => a.address).slice(0, MAX_ADDRESSES),
    messageId: messageIds(mail.messageId)[0],
    inReplyTo,
    replyIds: [...new Set([...(inReplyTo ? [inReplyTo] : []), ...references])],
    text: text.value,
    textTruncated: text.truncated,
    html: html?.value,
    htmlTruncated: html?.truncated ?? false,
    attachments: listed.map((a) => ({
      filename: a.filename ? a.filename.slice(0, 255) : null,
      contentType: a.contentType.slice(0, 255),
      size: a.size,
    })),
    attachmentsOmitted: Math.max(0, mail.attachments.length - MAX_ATTACHMENTS),
    attachmentContents: listed.map((a) => a.content),
  };
}
