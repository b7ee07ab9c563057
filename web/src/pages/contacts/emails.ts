/**
 * Pure rules of a contact's email list (no DOM, no imports): the tone and label of an email's
 * status, with the colours the campaign pages use, and the time a row shows. Unit-tested in
 * test/web/contact-emails.test.ts.
 */

export type EmailStatus = 'PENDING' | 'SENDING' | 'SENT' | 'DELIVERED' | 'OPENED' | 'CLICKED' | 'BOUNCED' | 'COMPLAINED' | 'FAILED' | 'CANCELLED';
export type Tone = 'neutral' | 'warn' | 'accent' | 'ok' | 'bad';

/** What a row needs of an email (GET /emails/contact/:contactId's items). */
export interface EmailTimes {
  status: EmailStatus;
  unconfirmed: boolean;
  createdAt: string;
  sentAt: string | null;
  deliveredAt: string | null;
  openedAt: string | null;
  clickedAt: string | null;
  bouncedAt: string | null;
  complainedAt: string | null;
  failedAt: string | null;
}

/**
 * Status colours as on the campaign pages (UI.md: green delivered, amber waiting, red failed or
 * bounced): waiting in the queue amber, on its way the accent (a SENDING campaign), sent and
 * every engagement after it green (a SENT campaign), a complaint amber (the campaign insight's
 * complaint rows), bounced, failed and cancelled red (a CANCELLED campaign); a SENT email the relay
 * never confirmed amber (the campaign's "Unconfirmed" counter).
 */
export function emailStatusTone(e: Pick<EmailTimes, 'status' | 'unconfirmed'>): Tone {
  switch (e.status) {
    case 'PENDING':
      return 'warn';
    case 'SENDING':
      return 'accent';
    case 'SENT':
      return e.unconfirmed ? 'warn' : 'ok';
    case 'DELIVERED':
    case 'OPENED':
    case 'CLICKED':
      return 'ok';
    case 'COMPLAINED':
      return 'warn';
    case 'BOUNCED':
    case 'FAILED':
    case 'CANCELLED':
      return 'bad';
  }
}

const LABELS: Record<EmailStatus, string> = {
  PENDING: 'Queued',
  SENDING: 'Sending',
  SENT: 'Sent',
  DELIVERED: 'Delivered',
  OPENED: 'Opened',
  CLICKED: 'Clicked',
  BOUNCED: 'Bounced',
  COMPLAINED: 'Complained',
  FAILED: 'Failed',
  CANCELLED: 'Cancelled',
};

export const emailStatusLabel = (e: Pick<EmailTimes, 'status' | 'unconfirmed'>): string => (e.status === 'SENT' && e.unconfirmed ? 'Unconfirmed' : LABELS[e.status]);

/** When the email reached its status (the status's milestone), else when it was queued: the time a row shows. */
export function emailStatusTime(e: EmailTimes): string {
  const at: Record<EmailStatus, string | null> = {
    PENDING: null,
    SENDING: null,
    SENT: e.sentAt,
    DELIVERED: e.deliveredAt,
    OPENED: e.openedAt,
    CLICKED: e.clickedAt,
    BOUNCED: e.bouncedAt,
    COMPLAINED: e.complainedAt,
    FAILED: e.failedAt,
    CANCELLED: null,
  };
  return at[e.status] ?? e.sentAt ?? e.createdAt;
}

/** Queued or being handed to the relay: its status will change soon (the list polls while one is). */
export const isOnItsWay = (e: Pick<EmailTimes, 'status'>): boolean => e.status === 'PENDING' || e.status === 'SENDING';
