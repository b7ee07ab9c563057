import { generateKeyPairSync } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { dkimVerify } from 'mailauth';
import { describe, expect, it } from 'vitest';
import { dkimSign } from '../../src/mail/dkim.js';
import { buildMime, composeMime, type MimeInput } from '../../src/mail/mime.js';
import { boundaryFor, buildMimeFast } from '../../src/mail/mime-fast.js';

const pixel = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');

describe('buildMime', () => {
  it('builds text and HTML alternatives, an inline cid image, an attachment and the given headers', async () => {
    const raw = await buildMime({
      from: { address: 'hello@sender.example', name: 'Sender Name' },
      to: { address: 'ada@example.com', name: 'Ada Lovelace' },
      replyTo: 'support@sender.example',
      subject: 'Grüße, Ada',
      html: '<p>Logo: <img src="cid:logo@sender"></p>',
      text: 'Logo:',
      messageId: '<id-1@sender.example>',
      date: new Date('2026-01-02T03:04:05Z'),
      headers: { 'X-Tag': 'naïve value', 'In-Reply-To': '<prev@sender.example>' },
      preparedHeaders: { 'List-Unsubscribe': '<https://mail.example/unsubscribe/a.b>' },
      attachments: [
        { filename: 'logo.png', contentType: 'image/png', cid: 'logo@sender', content: pixel.toString('base64') },
        { filename: 'report.csv', contentType: 'text/csv', content: Buffer.from('a,b\n1,2\n').toString('base64') },
      ],
    });
    const parsed = await simpleParser(raw);
    expect(parsed.subject).toBe('Grüße, Ada');
    expect(parsed.messageId).toBe('<id-1@sender.example>');
    expect(parsed.date?.toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(parsed.from?.value).toEqual([{ address: 'hello@sender.example', name: 'Sender Name' }]);
    expect(parsed.replyTo?.value[0]?.address).toBe('support@sender.example');
    expect(parsed.text?.trim()).toBe('Logo:');
    expect(raw.toString()).toMatch(/^X-Tag: =\?UTF-8\?Q\?na=C3=AFve_value\?=\r$/m);
    expect(parsed.headers.get('in-reply-to')).toBe('<prev@sender.example>');
    expect(raw.toString()).toMatch(/^List-Unsubscribe: <https:\/\/mail\.example\/unsubscribe\/a\.b>\r$/m);
    const inline = parsed.attachments.find((a) => a.filename === 'logo.png');
    expect(inline).toMatchObject({ contentId: '<logo@sender>', contentDisposition: 'inline', related: true, contentType: 'image/png' });
    expect(inline?.content.equals(pixel)).toBe(true);
    const file = parsed.attachments.find((a) => a.filename === 'report.csv');
    expect(file).toMatchObject({ contentDisposition: 'attachment', contentType: 'text/csv' });
    expect(file?.content.toString()).toBe('a,b\n1,2\n');
    expect(raw.toString()).toMatch(/Content-Type: multipart\/mixed/);
  });

  it('keeps a line break in a header value from starting a new header (defence behind the API validation)', async () => {
    const raw = await buildMime({
      from: { address: 'a@sender.example' },
      to: { address: 'b@example.com' },
      subject: 'one\r\nBcc: evil@example.com',
      html: '<p>x</p>',
      text: 'x',
      messageId: '<id-2@sender.example>',
      date: new Date(),
      headers: { 'X-A': 'a\r\nBcc: evil@example.com' },
    });
    expect(raw.toString()).not.toMatch(/^Bcc:/m);
    expect((await simpleParser(raw)).bcc).toBeUndefined();
  });
});

/** The header block, unfolded into fields, with the multipart boundary replaced by `B`. */
function headerFields(raw: Buffer, boundary: string | undefined): string[] {
  const text = raw.toString('utf8');
  const block = text.slice(0, text.indexOf('\r\n\r\n'));
  return block
    .replace(/\r\n[ \t]/g, ' ')
    .split('\r\n')
    .map((f) => (boundary ? f.replaceAll(boundary, 'B') : f));
}
const boundaryOf = (raw: Buffer) => /boundary="([^"]+)"/.exec(raw.toString('latin1'))?.[1];
/** Content-Transfer-Encoding of each part, in order. */
const encodingsOf = (raw: Buffer) => [...raw.toString('latin1').matchAll(/^Content-Transfer-Encoding: (.*)\r$/gm)].map((m) => m[1]);
/** The content as MIME means it: line breaks (CRLF, LF, lone CR) are one kind of thing. */
const lines = (s: string | false | undefined) => (s || '').replace(/\r\n|\r/g, '\n');

const base: MimeInput = {
  from: { address: 'hello@sender.example', name: 'Sender' },
  to: { address: 'ada@example.com' },
  subject: 'Hello',
  html: '<p>Hello</p>',
  text: 'Hello',
  messageId: '<0190a5f0-0000-7000-8000-000000000001@sender.example>',
  date: new Date('2026-01-02T03:04:05Z'),
};
const longHtml = `<table><tr><td style="padding:0 0 8px;font-family:Arial,Helvetica,sans-serif">${'word '.repeat(60)}</td></tr></table>`;
const cases: Record<string, Partial<MimeInput>> = {
  'ASCII everything': {},
  'non-ASCII subject and names': {
    subject: 'Grüße, Ada — 😀',
    from: { address: 'hello@sender.example', name: 'Sëñder Näme' },
    to: { address: 'ada@example.com', name: 'Ada Lövelace' },
  },
  'Cyrillic names and subject (B encoding), HTML and text mostly Cyrillic (base64 parts)': {
    subject: 'Привет, мир: ваш заказ подтверждён',
    from: { address: 'hello@sender.example', name: 'Магазин' },
    html: '<p>Здравствуйте, ваш заказ подтверждён и будет отправлен завтра утром.</p>',
    text: 'Здравствуйте, ваш заказ подтверждён\nи будет отправлен завтра утром.\n',
  },
  'long subject needing folding': {
    subject: 'A subject long enough to be folded by the composer because it goes on and on and on past 76',
  },
  'long non-ASCII subject split into encoded-words': { subject: `Grüße ${'über alles '.repeat(12)}` },
  'subject with quotes and a newline': { subject: 'say "hi"\r\nBcc: evil@example.com' },
  'names needing quotes': {
    from: { address: 'hello@sender.example', name: 'Shop, Inc. "Best" \\ Co' },
    to: { address: 'ada@example.com', name: 'Lovelace, Ada' },
  },
  'upper-case domain': { to: { address: 'Ada@Example.COM', name: 'Ada' } },
  'reply-to': { replyTo: 'support@sender.example' },
  'caller headers, encoded and folded': {
    headers: {
      'X-Tag': 'naïve value',
      'x-campaign-id': 'spring-2026',
      'X-Long': `${'token '.repeat(20)}end`,
      'X-Long-Unicode': `${'ünïcödé '.repeat(12)}end`,
      'In-Reply-To': 'prev@sender.example',
      References: '<a@x>  <b @y> c@z',
      'X-Empty': '  ',
      'X-Tab': 'a\tb',
    },
  },
  'prepared List-Unsubscribe and relay headers, one replacing a caller header of the same name': {
    headers: { 'X-PM-Metadata-email-id': 'caller', 'X-Other': 'kept' },
    preparedHeaders: {
      'List-Unsubscribe': `<https://mail.example/unsubscribe/${'a'.repeat(120)}.b>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      'X-PM-Metadata-email-id': '0190a5f0-0000-7000-8000-000000000001',
      'list-id': '  ',
    },
  },
  'HTML with long lines, dots, From and trailing spaces': {
    html: `${longHtml}\n.\n.leading dot\nFrom the start\nFrom \ntrailing spaces   \ntrailing tab\t\n= sign and =3D\n${'x'.repeat(300)}`,
    text: `.\n.dot\nFrom here\ntrailing   \n${'y'.repeat(200)}`,
  },
  'CR/LF variations': {
    html: '<p>a</p>\r\n<p>b</p>\r<p>c</p>\n\n<p>d</p>\r\n\r\n',
    text: 'a\r\nb\rc\n\nd \r\n',
  },
  'emoji and non-BMP characters across soft line breaks': {
    html: `<p>${'😀é'.repeat(40)}</p><p>${'a'.repeat(73)}😀😀</p><p>ß</p>`,
    text: `${'€'.repeat(30)} ${'abc '.repeat(20)}`,
  },
  'control characters': { html: '<p>bell\u0007 and nul-free \u000b vertical tab</p>', text: 'form\u000cfeed and plenty of latin letters' },
  'empty text part (HTML only)': { text: '', html: '<p>Only HTML</p>\n' },
  'empty HTML part (text only)': { html: '', text: 'Only text without a final newline' },
  'text ending without a newline, HTML ending with one': { text: 'no newline', html: '<p>newline</p>\n' },
  'long ASCII text (quoted-printable)': { text: `${'long line '.repeat(20)}\nshort` },
};

describe('buildMimeFast (the message without MailComposer)', () => {
  it.each(Object.entries(cases))('%s: the same message as MailComposer', async (_name, patch) => {
    const input = { ...base, ...patch };
    const fast = buildMimeFast(input);
    expect(fast, 'takes the fast path').toBeInstanceOf(Buffer);
    if (!fast) return;
    const composed = await composeMime(input);
    // Same header fields, same order, same encoding and folding (up to the random boundary).
    expect(headerFields(fast, boundaryOf(fast))).toEqual(headerFields(composed, boundaryOf(composed)));
    expect(encodingsOf(fast)).toEqual(encodingsOf(composed));
    const [a, b] = await Promise.all([simpleParser(fast), simpleParser(composed)]);
    expect([...a.headers.keys()]).toEqual([...b.headers.keys()]);
    for (const key of ['subject', 'from', 'to', 'reply-to', 'message-id', 'date', 'in-reply-to', 'references', 'list-unsubscribe', 'x-tag', 'x-long-unicode']) {
      expect(JSON.stringify(a.headers.get(key)), key).toBe(JSON.stringify(b.headers.get(key)));
    }
    expect(lines(a.text)).toBe(lines(b.text));
    expect(lines(a.html)).toBe(lines(b.html));
    // (A single part ends with the message's final line break.)
    if (input.text) expect(lines(a.text).replace(/\n$/, '')).toBe(lines(input.text).replace(/\n$/, ''));
    if (input.html) expect(lines(a.html)).toBe(lines(input.html));
  });

  it.each(Object.entries(cases))('%s: CRLF line ends, lines of at most 76 characters in the bodies and 998 in all', (_name, patch) => {
    const raw = buildMimeFast({ ...base, ...patch })?.toString('latin1') ?? '';
    expect(raw).not.toMatch(/\r(?!\n)|(?<!\r)\n/);
    expect(raw.endsWith('\r\n')).toBe(true);
    const [head = '', ...body] = raw.split('\r\n\r\n');
    for (const line of head.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
    for (const line of body.join('\r\n\r\n').split('\r\n')) expect(line.length, line).toBeLessThanOrEqual(76);
    // A soft line break never splits a UTF-8 sequence: no line after one starts with a continuation byte.
    expect(raw).not.toMatch(/=\r\n=[89AB][0-9A-F]/);
  });

  it('writes every line break of a part (CRLF, LF, a lone CR) as CRLF, in 7bit and in quoted-printable', () => {
    const raw = buildMimeFast({ ...base, text: 'a\rb\nc\r\nd', html: `${'x'.repeat(80)}\r<p>b</p>\n<p>c</p>\r\n<p>d</p>` })?.toString('latin1') ?? '';
    expect(encodingsOf(Buffer.from(raw))).toEqual(['7bit', 'quoted-printable']);
    expect(raw).toContain('\r\n\r\na\r\nb\r\nc\r\nd\r\n--');
    expect(raw).toContain('x=\r\nxxxxx\r\n<p>b</p>\r\n<p>c</p>\r\n<p>d</p>\r\n--');
  });

  it('writes a multipart body whose boundary occurs in no part', () => {
    const raw = buildMimeFast({ ...base, html: '<p>--_NmP-</p>' })?.toString('latin1') ?? '';
    const boundary = boundaryOf(Buffer.from(raw)) ?? '';
    expect(boundary).toMatch(/^--_NmP-[0-9a-f]{16}-Part_1$/);
    expect(raw.split(`--${boundary}`)).toHaveLength(4);
    expect(raw.endsWith(`\r\n--${boundary}--\r\n`)).toBe(true);
    // A part that contains the first candidate gets another one.
    const draws = ['0123456789abcdef', 'fedcba9876543210'];
    const body = Buffer.from(`<p>----_NmP-0123456789abcdef-Part_1</p>`);
    expect(boundaryFor([Buffer.from('x'), body], () => draws.shift() ?? '')).toBe('--_NmP-fedcba9876543210-Part_1');
    expect(boundaryFor([Buffer.from('x')], () => '0123456789abcdef')).toBe('--_NmP-0123456789abcdef-Part_1');
  });

  it('leaves to MailComposer what it does not write itself', () => {
    const attachment = { filename: 'a.txt', contentType: 'text/plain', content: Buffer.from('a').toString('base64') };
    expect(buildMimeFast({ ...base, attachments: [attachment] })).toBeUndefined();
    expect(buildMimeFast({ ...base, to: { address: 'ada@exämple.com' } })).toBeUndefined();
    expect(buildMimeFast({ ...base, to: { address: '"ada lovelace"@example.com' } })).toBeUndefined();
    expect(buildMimeFast({ ...base, replyTo: 'Support <support@sender.example>' })).toBeUndefined();
    expect(buildMimeFast({ ...base, headers: { 'content-type': 'text/plain' } })).toBeUndefined();
    expect(buildMimeFast({ ...base, preparedHeaders: { Date: 'Thu, 01 Jan 2026 00:00:00 +0000' } })).toBeUndefined();
    expect(buildMimeFast({ ...base, text: '', html: '' })).toBeUndefined();
  });

  it('signs with dkim.ts into a message mailauth verifies', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'der' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const record = `v=DKIM1; k=rsa; p=${publicKey.toString('base64')}`;
    const resolver = async (name: string, rrtype: string) => {
      if (rrtype === 'TXT' && name === 'mp1._domainkey.sender.example') return [[record.slice(0, 200), record.slice(200)]];
      throw Object.assign(new Error(`no ${rrtype} ${name}`), { code: 'ENOTFOUND' });
    };
    const input = { ...base, ...cases['HTML with long lines, dots, From and trailing spaces'], ...cases['non-ASCII subject and names'], ...cases['prepared List-Unsubscribe and relay headers, one replacing a caller header of the same name'] };
    const fast = buildMimeFast(input);
    expect(fast).toBeInstanceOf(Buffer);
    const signed = dkimSign(fast ?? Buffer.alloc(0), { domainName: 'sender.example', keySelector: 'mp1', privateKey });
    const { results } = await dkimVerify(signed, { resolver });
    expect(results[0]?.status.result, JSON.stringify(results[0]?.status)).toBe('pass');
    const h = /h=([^;]+);/.exec(signed.toString('latin1'))?.[1]?.replace(/\s/g, '').split(':');
    expect(h).toEqual(['from', 'subject', 'date', 'message-id', 'to', 'mime-version', 'content-type', 'list-unsubscribe', 'list-unsubscribe-post']);
  });
});
