import { describe, expect, it } from 'vitest';
import { type EmailTimes, emailStatusLabel, emailStatusTime, emailStatusTone, isOnItsWay } from '../../web/src/pages/contacts/emails.js';

const base: EmailTimes = {
  status: 'PENDING',
  unconfirmed: false,
  createdAt: '2026-05-01T10:00:00.000Z',
  sentAt: null,
  deliveredAt: null,
  openedAt: null,
  clickedAt: null,
  bouncedAt: null,
  complainedAt: null,
  failedAt: null,
};

describe("a contact's email rows", () => {
  it('colours statuses as the campaign pages do: waiting amber, sending accent, sent and after green, complaints amber, failures red', () => {
    const tones = (['PENDING', 'SENDING', 'SENT', 'DELIVERED', 'OPENED', 'CLICKED', 'COMPLAINED', 'BOUNCED', 'FAILED', 'CANCELLED'] as const).map((status) => [status, emailStatusTone({ status, unconfirmed: false })]);
    expect(Object.fromEntries(tones)).toEqual({
      PENDING: 'warn',
      SENDING: 'accent',
      SENT: 'ok',
      DELIVERED: 'ok',
      OPENED: 'ok',
      CLICKED: 'ok',
      COMPLAINED: 'warn',
      BOUNCED: 'bad',
      FAILED: 'bad',
      CANCELLED: 'bad',
    });
  });

  it('shows an unconfirmed SENT email as Unconfirmed, in amber', () => {
    expect(emailStatusTone({ status: 'SENT', unconfirmed: true })).toBe('warn');
    expect(emailStatusLabel({ status: 'SENT', unconfirmed: true })).toBe('Unconfirmed');
    expect(emailStatusLabel({ status: 'SENT', unconfirmed: false })).toBe('Sent');
    expect(emailStatusLabel({ status: 'PENDING', unconfirmed: false })).toBe('Queued');
  });

  it("shows the time of the status's milestone, else when it was sent, else when it was queued", () => {
    expect(emailStatusTime(base)).toBe(base.createdAt);
    const sent = { ...base, status: 'SENT' as const, sentAt: '2026-05-01T10:00:05.000Z' };
    expect(emailStatusTime(sent)).toBe(sent.sentAt);
    expect(emailStatusTime({ ...sent, status: 'OPENED', deliveredAt: '2026-05-01T10:01:00.000Z', openedAt: '2026-05-01T12:00:00.000Z' })).toBe('2026-05-01T12:00:00.000Z');
    expect(emailStatusTime({ ...sent, status: 'BOUNCED', bouncedAt: '2026-05-01T10:02:00.000Z' })).toBe('2026-05-01T10:02:00.000Z');
    // A milestone reached without its own time (a click without a recorded open) falls back to the send.
    expect(emailStatusTime({ ...sent, status: 'CLICKED' })).toBe(sent.sentAt);
    expect(emailStatusTime({ ...base, status: 'CANCELLED' })).toBe(base.createdAt);
  });

  it('polls only while an email is queued or sending', () => {
    expect(isOnItsWay({ status: 'PENDING' })).toBe(true);
    expect(isOnItsWay({ status: 'SENDING' })).toBe(true);
    expect(['SENT', 'DELIVERED', 'BOUNCED', 'FAILED', 'CANCELLED'].map((status) => isOnItsWay({ status: status as EmailTimes['status'] }))).toEqual([false, false, false, false, false]);
  });
});
