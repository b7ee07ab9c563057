import { randomFillSync } from 'node:crypto';
import mimeFuncs from 'nodemailer/lib/mime-funcs/index.js';
import { encodeBody, prefersQ, transferEncodingOf } from './body-encoding.js';
import type { Mailbox, MimeInput } from './mime.js';

/**
 * The message of `buildMime` without nodemailer's MailComposer (its streams, timers and
 * per-character QP encoding cost ~150–350 µs per email): the same header fields in the same
 * order, encoded and folded by nodemailer's own header helpers, and the same transfer encodings;
 * the bodies in canonical CRLF form. Returns undefined for what it does not write the way
 * MailComposer does (attachments, a header MailComposer writes itself, addresses needing
 * parsing or punycode, two empty bodies): `buildMime` composes those with MailComposer.
 */
export function buildMimeFast(input: MimeInput): Buffer | undefined {
  if (input.attachments?.length || (!input.text && !input.html) || !input.messageId) return undefined;
  const from = addressField(input.from);
  const to = addressField(input.to);
  const replyTo = input.replyTo ? addressField({ address: input.replyTo }) : '';
  if (from === undefined || to === undefined || replyTo === undefined) return undefined;

  const lines: string[] = [];
  // MailComposer: the caller's headers first, a prepared one replacing the caller's of the same name.
  const headers: Record<string, string | { prepared: true; value: string }> = { ...input.headers };
  for (const [key, value] of Object.entries(input.preparedHeaders ?? {})) headers[key] = { prepared: true, value };
  for (const [rawKey, value] of Object.entries(headers)) {
    const key = normalizeHeaderKey(rawKey);
    if (COMPOSER_HEADERS.has(key.toLowerCase())) return undefined;
    if (typeof value === 'object') {
      if (value.value.trim()) lines.push(`${key}: ${value.value}`);
      continue;
    }
    const encoded = encodeCallerValue(key, value);
    if (encoded.trim()) lines.push(fold(key, encoded));
  }
  lines.push(fold('From', from), fold('To', to));
  if (replyTo) lines.push(fold('Reply-To', replyTo));
  if (input.subject) lines.push(fold('Subject', encodeWords(oneLine(input.subject))));
  lines.push(fold('Message-ID', angled(input.messageId)));
  lines.push(fold('Date', input.date.toUTCString().replace(/GMT/, '+0000')));

  const parts = [
    ...(input.text ? [{ type: 'text/plain; charset=utf-8', content: input.text }] : []),
    ...(input.html ? [{ type: 'text/html; charset=utf-8', content: input.html }] : []),
  ].map((p) => {
    const encoding = transferEncodingOf(p.content);
    return { type: p.type, encoding, body: encodeBody(p.content, encoding) };
  });

  const single = parts.length === 1 ? parts[0] : undefined;
  if (single) {
    // A single part is the root: its Content-Type last, as MailComposer orders them; the message
    // ends with a line break (MailComposer's LastNewline).
    lines.push(`Content-Transfer-Encoding: ${single.encoding}`, 'MIME-Version: 1.0', fold('Content-Type', single.type));
    const end = single.body.length === 0 || single.body[single.body.length - 1] !== 10 ? '\r\n' : '';
    return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), single.body, Buffer.from(end, 'latin1')]);
  }
  const boundary = boundaryFor(parts.map((p) => p.body));
  lines.push('MIME-Version: 1.0', fold('Content-Type', `multipart/alternative; boundary="${boundary}"`));
  const chunks: Buffer[] = [Buffer.from(`${lines.join('\r\n')}\r\n\r\n`)];
  parts.forEach((p, i) => {
    const head = `Content-Type: ${p.type}\r\nContent-Transfer-Encoding: ${p.encoding}\r\n\r\n`;
    chunks.push(Buffer.from(`${i === 0 ? '' : '\r\n'}--${boundary}\r\n${head}`, 'latin1'), p.body);
  });
  chunks.push(Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1'));
  return Buffer.concat(chunks);
}

/**
 * Fields MailComposer writes or parses itself (a caller's copy would be replaced, moved or
 * reparsed there); the API refuses them as caller headers (send.schema.ts RESERVED_HEADERS).
 */
const COMPOSER_HEADERS: ReadonlySet<string> = new Set([
  'from', 'sender', 'to', 'cc', 'bcc', 'reply-to', 'subject', 'date', 'message-id', 'mime-version',
  'content-type', 'content-transfer-encoding', 'content-disposition', 'content-id',
]);

/** A dot-atom address with an ASCII domain: what nodemailer writes unparsed, the domain lowercased. */
const SIMPLE_ADDRESS = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]+@[A-Za-z0-9.-]+$/;
const WORD_NAME = /^[\w ]*$/;
const PRINTABLE_NAME = /^[\x20-\x7e]*$/;

/** nodemailer's `_convertAddresses` of one mailbox; undefined when the address needs its parser. */
function addressField(m: Mailbox): string | undefined {
  if (!SIMPLE_ADDRESS.test(m.address)) return undefined;
  const at = m.address.lastIndexOf('@');
  const address = `${m.address.slice(0, at)}@${m.address.slice(at + 1).toLowerCase()}`;
  return m.name ? `${encodeAddressName(m.name)} <${address}>` : address;
}

/** nodemailer's `_encodeAddressName`: as is, quoted, or an RFC 2047 encoded-word. */
function encodeAddressName(name: string): string {
  if (WORD_NAME.test(name)) return name;
  if (PRINTABLE_NAME.test(name)) return `"${name.replace(/([\\"])/g, '\\$1')}"`;
  return mimeFuncs.encodeWord(name, prefersQ(name) ? 'Q' : 'B', 52);
}

/** nodemailer's `encodeWords(value, …, 52, true)`: the whole value as encoded-words if any of it needs it. */
function encodeWords(value: string): string {
  return /["\u0080-\uffff]/.test(value) ? mimeFuncs.encodeWord(value, prefersQ(value) ? 'Q' : 'B', 52) : value;
}

const oneLine = (value: string) => value.replace(/\r?\n|\r/g, ' ');
const fold = (key: string, value: string) => mimeFuncs.foldLines(`${key}: ${value}`, 76);

function angled(value: string): string {
  let v = oneLine(value);
  if (v.charAt(0) !== '<') v = `<${v}`;
  if (v.charAt(v.length - 1) !== '>') v = `${v}>`;
  return v;
}

/** nodemailer's `_encodeHeaderValue` for a caller's field (the fields it writes itself never get here). */
function encodeCallerValue(key: string, value: string): string {
  if (key === 'In-Reply-To') return angled(value);
  if (key === 'References') {
    const ids = oneLine(value)
      .trim()
      .replace(/<[^>]*>/g, (id) => id.replace(/\s/g, ''))
      .split(/\s+/);
    return ids.map(angled).join(' ').trim();
  }
  return encodeWords(oneLine(value));
}

/** nodemailer's `_normalizeHeaderKey`: Camel-Case, MIME/DKIM/ARC/BIMI and -ID/-SPF/-FBL/-MD5 upper case. */
function normalizeHeaderKey(key: string): string {
  return oneLine(key)
    .trim()
    .toLowerCase()
    .replace(/^X-SMTPAPI$|^(MIME|DKIM|ARC|BIMI)\b|^[a-z]|-(SPF|FBL|ID|MD5)$|-[a-z]/gi, (c) => c.toUpperCase())
    .replace(/^Content-Features$/i, 'Content-features');
}

/** Random bytes drawn in blocks: one `randomFillSync` per 512 boundaries. */
const pool = Buffer.alloc(4096);
let poolAt = pool.length;

function randomHex16(): string {
  if (poolAt + 8 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += 8;
  return pool.toString('hex', poolAt - 8, poolAt);
}

/**
 * MailComposer's boundary shape with 64 random bits, drawn again in the (astronomically
 * unlikely) case that an encoded part contains it. `random` is for tests.
 */
export function boundaryFor(bodies: readonly Buffer[], random: () => string = randomHex16): string {
  for (;;) {
    const boundary = `--_NmP-${random()}-Part_1`;
    if (!bodies.some((b) => b.includes(boundary))) return boundary;
  }
}
