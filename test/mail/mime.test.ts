import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { buildMime } from '../../src/mail/mime.js';

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
