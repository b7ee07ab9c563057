import { describe, expect, it } from 'vitest';
import { classifyMessage } from '../../../src/modules/bounces/index.js';
import { clientKey } from '../../../src/modules/bounces/rate-limit.js';
import { fixture } from './helpers.js';

const vars = { verp: 'b-x@bounces.test', recipient: 'bob@recipient.example', messageId: '<m1@sender.example>', reportId: 'r1' };
const classify = async (raw: string | Buffer) => (await classifyMessage(Buffer.isBuffer(raw) ? raw : Buffer.from(raw.replace(/\r?\n/g, '\r\n')))).classification;

/** A DSN whose recipient block is `fields`. */
const dsn = (fields: string, opts: { wrap?: boolean; base64?: boolean } = {}) => {
  const status = `Reporting-MTA: dns; mx.example\n\nFinal-Recipient: rfc822; bob@recipient.example\n${fields}\n`;
  const body = opts.base64 ? Buffer.from(status.replace(/\n/g, '\r\n')).toString('base64').replace(/(.{76})/g, '$1\n') : status;
  const report = `Content-Type: multipart/report; report-type=delivery-status; boundary="R"\n\n--R\nContent-Type: text/plain\n\nFailed.\n\n--R\nContent-Type: message/delivery-status${opts.base64 ? '\nContent-Transfer-Encoding: base64' : ''}\n\n${body}\n--R--\n`;
  const head = 'From: MAILER-DAEMON@mx.example\nSubject: Returned mail\nMIME-Version: 1.0\n';
  return opts.wrap ? `${head}Content-Type: multipart/mixed; boundary="W"\n\n--W\n${report}\n--W--\n` : `${head}${report}`;
};

describe('reading reports', () => {
  it('reads every fixture as the kind and format it is', async () => {
    const expected: Record<string, object> = {
      'rfc3464.eml': { kind: 'hard-bounce', status: '5.1.1', subType: 'NoEmail', format: 'rfc3464', recipient: 'bob@recipient.example', remoteMta: 'mail.recipient.example' },
      'postfix.eml': { kind: 'hard-bounce', status: '5.1.1', format: 'rfc3464', action: 'failed' },
      'gmail.eml': { kind: 'hard-bounce', status: '5.1.1', format: 'gmail', diagnosticCode: expect.stringContaining('does not exist') },
      'outlook.eml': { kind: 'hard-bounce', status: '5.1.10', format: 'microsoft', diagnosticCode: expect.stringContaining('RecipientNotFound') },
      'yahoo-hard.eml': { kind: 'hard-bounce', status: '5.0.0', format: 'yahoo', diagnosticCode: expect.stringContaining("doesn't have a yahoo.com account") },
      'yahoo-soft.eml': { kind: 'soft-bounce', status: '4.2.2', subType: 'MailboxFull', format: 'yahoo' },
      'exim.eml': { kind: 'hard-bounce', status: '5.1.1', format: 'exim' },
      'qmail.eml': { kind: 'hard-bounce', status: '5.1.1', format: 'qmail' },
      'rfc3464-delayed.eml': { kind: 'delayed', status: '4.4.7', format: 'rfc3464' },
      'arf-abuse.eml': { kind: 'complaint', feedbackType: 'abuse', format: 'arf', originalRecipient: 'bob@recipient.example', sourceIp: '192.0.2.1' },
      'out-of-office.eml': { kind: 'auto-reply' },
    };
    for (const [name, want] of Object.entries(expected)) expect(await classify(fixture(name, vars)), name).toMatchObject(want);
  });

  it('hard or soft by status: 5.x.x hard; 5.2.2, 5.7.x and 4.x.x soft; a success is no bounce', async () => {
    expect(await classify(dsn('Action: failed\nStatus: 5.1.2'))).toMatchObject({ kind: 'hard-bounce', subType: 'NoEmail' });
    expect(await classify(dsn('Action: failed\nStatus: 5.4.4'))).toMatchObject({ kind: 'hard-bounce', subType: 'General' });
    expect(await classify(dsn('Action: failed\nStatus: 5.2.2'))).toMatchObject({ kind: 'soft-bounce', subType: 'MailboxFull' });
    expect(await classify(dsn('Action: failed\nStatus: 5.7.1\nDiagnostic-Code: smtp; 550 5.7.1 Message rejected as spam'))).toMatchObject({ kind: 'soft-bounce', subType: 'Blocked' });
    expect(await classify(dsn('Action: failed\nStatus: 4.4.1'))).toMatchObject({ kind: 'soft-bounce', subType: 'General' });
    expect(await classify(dsn('Action: delivered\nStatus: 2.0.0'))).toMatchObject({ kind: 'other' });
  });

  it('refines a missing or x.0.0 Status from the diagnostic; reads nested and base64-encoded reports', async () => {
    expect(await classify(dsn('Action: failed\nStatus: 5.0.0\nDiagnostic-Code: smtp; 550 5.1.1 no such user'))).toMatchObject({ status: '5.1.1', kind: 'hard-bounce' });
    expect(await classify(dsn('Action: failed\nDiagnostic-Code: smtp; 452 mailbox over quota'))).toMatchObject({ status: '4.0.0', kind: 'soft-bounce' });
    expect(await classify(dsn('Action: failed\nStatus: 5.1.1', { wrap: true }))).toMatchObject({ kind: 'hard-bounce', status: '5.1.1' });
    expect(await classify(dsn('Action: failed\nStatus: 5.1.1', { base64: true }))).toMatchObject({ kind: 'hard-bounce', status: '5.1.1' });
  });

  it('ARF not-spam and auth-failure reports are not complaints', async () => {
    const arf = (type: string) =>
      `From: fbl@isp.example\nSubject: report\nContent-Type: multipart/report; report-type=feedback-report; boundary="F"\n\n--F\nContent-Type: text/plain\n\nx\n--F\nContent-Type: message/feedback-report\n\nFeedback-Type: ${type}\nVersion: 1\n\n--F--\n`;
    expect(await classify(arf('fraud'))).toMatchObject({ kind: 'complaint', feedbackType: 'fraud' });
    expect(await classify(arf('not-spam'))).toMatchObject({ kind: 'other' });
    expect(await classify(arf('auth-failure'))).toMatchObject({ kind: 'other' });
  });

  it('prose: reads only what comes before the quoted original; a person\'s reply is no bounce', async () => {
    const quotedOnly = 'From: MAILER-DAEMON@mx.example\nSubject: Undeliverable: hi\n\nSomething happened.\n\n----- Original message -----\n\n550 5.1.1 quoted\n';
    expect(await classify(quotedOnly)).toMatchObject({ kind: 'other' });
    expect(await classify('From: bob@recipient.example\nSubject: Re: Welcome\n\nThanks! Error 550 5.1.1 on my side, ha.\n')).toMatchObject({ kind: 'other' });
    expect(await classify('From: bob@recipient.example\nSubject: Re: Welcome\nX-Autorespond: yes\n\nI am away.\n')).toMatchObject({ kind: 'auto-reply' });
    expect(await classify('From: bob@recipient.example\nSubject: Out of Office: Welcome\n\nI am away.\n')).toMatchObject({ kind: 'auto-reply' });
    expect(await classify('From: postmaster@mx.example\nSubject: Delivery Status Notification (Delay)\n\nDelivery to bob has been delayed: 421 4.7.0 try again later\n')).toMatchObject({ kind: 'delayed' });
  });
});

describe('rate-limit keys', () => {
  it('an IPv4 address is its own key; IPv6 addresses share their /64', () => {
    expect(clientKey('192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:0db8:0001:0002:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});
