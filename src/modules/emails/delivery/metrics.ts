import { emailDeliveries, emailDeliverySeconds, SmtpErrorKind, smtpErrors } from '../../../lib/metrics.js';
import type { SmtpError } from '../../../mail/transports/smtp.js';
import type { DeliveryEmail } from '../emails.repo.js';
import type { DeliveryOutcome } from './delivery.js';

/**
 * What delivery records for GET /metrics (docs/operations.md "Metrics and health"): the time
 * from acceptance to SENT, failed SMTP transactions by kind, and how attempts ended. Counted in
 * the process that delivers (a worker): scrape every worker (METRICS_PORT) to see them all.
 */

/** The email just became SENT (relay 250 or captured): seconds since its row was created. */
export function recordSent(email: Pick<DeliveryEmail, 'createdAt' | 'source'>): void {
  emailDeliverySeconds.observe({ source: email.source }, Math.max(0, (Date.now() - email.createdAt.getTime()) / 1000));
}

/** A failed SMTP transaction, classified (see {@link SmtpErrorKind}). */
export function recordSmtpError(smtp: SmtpError): void {
  const kind =
    smtp.endOfDataSent && smtp.responseCode === undefined
      ? SmtpErrorKind.noReply
      : smtp.permanent
        ? SmtpErrorKind.permanent
        : smtp.responseCode !== undefined
          ? SmtpErrorKind.temporary
          : SmtpErrorKind.connection;
  smtpErrors.inc({ kind });
}

/** Counts how an attempt ended: its outcome's kind, `retried` for a transient failure, `error` for anything else thrown. */
export async function countOutcome(attempt: Promise<DeliveryOutcome>, isRetry: (err: unknown) => boolean): Promise<DeliveryOutcome> {
  try {
    const outcome = await attempt;
    emailDeliveries.inc({ outcome: outcome.kind });
    return outcome;
  } catch (err) {
    emailDeliveries.inc({ outcome: isRetry(err) ? 'retried' : 'error' });
    throw err;
  }
}
