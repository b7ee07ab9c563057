import { describe, expect, it } from 'vitest';
import { smtpErrors } from '../../../src/lib/metrics.js';
import { recordSmtpError } from '../../../src/modules/emails/delivery/metrics.js';
import { classifySmtpError, SmtpError } from '../../../src/mail/transports/smtp.js';

const count = async (kind: string) => (await smtpErrors.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;

describe('mailplatform_smtp_errors_total', () => {
  it.each([
    ['permanent', new SmtpError('550 5.1.1 no such user', true, 550)],
    ['temporary', new SmtpError('451 4.7.1 try later', false, 451)],
    ['connection', classifySmtpError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:25'), { code: 'ECONNECTION' }))],
    ['no_reply', Object.assign(new SmtpError('ECONNECTION: closed', false, undefined), { endOfDataSent: true })],
    // An envelope the relay can never take, refused before any reply: permanent, not a connection failure.
    ['permanent', classifySmtpError(Object.assign(new Error('message too large'), { code: 'EMESSAGE' }))],
  ])('counts %s for %s', async (kind, err) => {
    const before = await count(kind);
    recordSmtpError(err);
    expect(await count(kind)).toBe(before + 1);
  });
});
