import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { describe, expect, it } from 'vitest';
import { canonicalBodyRelaxed, canonicalHeaderRelaxed, dkimSign } from '../../src/mail/dkim.js';
import { buildMime } from '../../src/mail/mime.js';

const { publicKey, privateKey } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'der' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const other = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
const key = { domainName: 'sender.example', keySelector: 'mp1', privateKey };
const record = `v=DKIM1; k=rsa; p=${publicKey.toString('base64')}`;
const resolver = async (name: string, rrtype: string) => {
  if (rrtype === 'TXT' && name === 'mp1._domainkey.sender.example') return [[record.slice(0, 200), record.slice(200)]];
  throw Object.assign(new Error(`no ${rrtype} ${name}`), { code: 'ENOTFOUND' });
};

async function verify(message: Buffer) {
  const { results } = await dkimVerify(message, { resolver });
  return results;
}

const message = () =>
  buildMime({
    from: { address: 'hello@sender.example', name: 'Sender Ünïcode' },
    to: { address: 'ada@example.com', name: 'Ada' },
    replyTo: 'support@sender.example',
    subject: 'Grüße — a subject long enough to be folded by the composer because it goes on and on and on',
    html: '<p>Hello   Ada,  </p>\n\n<p>€ and trailing spaces   </p>',
    text: 'Hello   Ada,  \n\n',
    messageId: '<0190a5f0-0000-7000-8000-000000000001@sender.example>',
    date: new Date('2026-01-02T03:04:05Z'),
    headers: { 'X-Campaign': 'spring', References: '<a@x> <b@y>' },
    preparedHeaders: { 'List-Unsubscribe': '<https://mail.example/unsubscribe/abc.def>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  });

describe('dkimSign (rsa-sha256, relaxed/relaxed)', () => {
  it('produces a signature mailauth verifies as pass, covering the compliance headers', async () => {
    const signed = dkimSign(await message(), key);
    const [result] = await verify(signed);
    expect(result?.status.result, JSON.stringify(result?.status)).toBe('pass');
    expect(result?.signingDomain).toBe('sender.example');
    const header = signed.toString('latin1').split('\r\n\r\n')[0] ?? '';
    expect(header.startsWith('DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=sender.example; s=mp1;')).toBe(true);
    const h = /h=([^;]+);/.exec(header)?.[1]?.replace(/\s/g, '').split(':');
    expect(h).toEqual(expect.arrayContaining(['from', 'to', 'subject', 'date', 'message-id', 'reply-to', 'references', 'list-unsubscribe', 'list-unsubscribe-post', 'content-type', 'mime-version']));
    for (const line of header.split('\r\n')) expect(line.length).toBeLessThanOrEqual(998);
  });

  it('fails verification when the body, a signed header or the key changes', async () => {
    const signed = dkimSign(await message(), key).toString('latin1');
    const [body] = await verify(Buffer.from(signed.replace('Hello', 'Jello'), 'latin1'));
    expect(body?.status.result).not.toBe('pass');
    const [subject] = await verify(Buffer.from(signed.replace('Message-ID: <0190a5f0', 'Message-ID: <1190a5f0'), 'latin1'));
    expect(subject?.status.result).not.toBe('pass');
    const [wrongKey] = await verify(dkimSign(await message(), { ...key, privateKey: other.privateKey }));
    expect(wrongKey?.status.result).not.toBe('pass');
  });

  it('survives whitespace changes relaxed canonicalisation allows (refolded headers, trailing spaces and blank lines)', async () => {
    const signed = dkimSign(await message(), key).toString('latin1');
    const [head = '', body = ''] = [signed.slice(0, signed.indexOf('\r\n\r\n')), signed.slice(signed.indexOf('\r\n\r\n') + 4)];
    const touched = `${head.replace('X-Campaign: spring', 'X-Campaign:   spring').replace(/^Subject: /m, 'Subject:\t ')}\r\n\r\n${body.replace(/\r\n/g, '  \r\n')}\r\n\r\n\r\n`;
    const [result] = await verify(Buffer.from(touched, 'latin1'));
    expect(result?.status.result, JSON.stringify(result?.status)).toBe('pass');
  });

  it('normalises bare LF line ends before signing', async () => {
    const raw = Buffer.from('From: a@sender.example\nTo: b@example.com\nSubject: lf\n\nline one\nline two\n');
    const signed = dkimSign(raw, key);
    expect(signed.toString('latin1')).not.toMatch(/[^\r]\n/);
    const [result] = await verify(signed);
    expect(result?.status.result).toBe('pass');
  });

  it('signs the last instance of a repeated header first (RFC 6376 §5.4.2)', async () => {
    const raw = Buffer.from('From: a@sender.example\r\nTo: b@example.com\r\nSubject: one\r\nSubject: two\r\n\r\nbody\r\n');
    const signed = dkimSign(raw, key);
    expect(/h=([^;]+);/.exec(signed.toString())?.[1]).toBe('from:subject:subject:to');
    const [result] = await verify(signed);
    expect(result?.status.result).toBe('pass');
  });
});

describe('relaxed canonicalisation', () => {
  it('reduces body whitespace, drops trailing blank lines and ends with one CRLF', () => {
    expect(canonicalBodyRelaxed('a  \t b \r\n\r\n \r\n\r\n')).toBe('a b\r\n');
    expect(canonicalBodyRelaxed('x')).toBe('x\r\n');
    expect(canonicalBodyRelaxed('\r\n\r\n')).toBe('');
    expect(canonicalBodyRelaxed('')).toBe('');
  });

  it('lower-cases the name, unfolds and reduces the value', () => {
    expect(canonicalHeaderRelaxed('Subject :  Hello\r\n\t  World  ')).toBe('subject:Hello World');
  });
});
