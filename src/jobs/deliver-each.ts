import type { JobHelpers } from 'graphile-worker';
import { type Delivery, RetryableDeliveryError, SEND_MAX_ATTEMPTS } from '../modules/emails/index.js';
import { queueEmailJob } from './send-email.js';

/** graphile-worker's backoff after a first failed attempt (exp(1) seconds): an email's retry waits as its own job's would. */
const FIRST_RETRY_DELAY_MS = Math.round(Math.exp(1) * 1000);

/**
 * Delivers the emails of one batch job (a campaign's range, a /v1/send batch), `concurrency` at a
 * time, through the same delivery as a send-email job (exactly once per email whatever runs it:
 * a re-run batch skips what is final). Each email's outcome is its own: one that fails
 * transiently, or whose delivery throws, gets a send-email job of its own at `priority` (its
 * first attempt counted) and its batch-mates go on; one throttled by its project's rate is
 * rescheduled as its own job holding its slot. Throws (so the batch job is retried whole) only
 * when such a job cannot be queued.
 */
export async function deliverEach(
  delivery: Delivery,
  emailIds: readonly string[],
  helpers: JobHelpers,
  opts: { priority: number; concurrency: number },
): Promise<void> {
  async function deliverOne(emailId: string): Promise<void> {
    try {
      const outcome = await delivery.deliver({ emailId, attempt: 1, maxAttempts: SEND_MAX_ATTEMPTS });
      if (outcome.kind === 'throttled') {
        await queueEmailJob(helpers, { emailId, reserved: true }, { runAt: outcome.runAt, priority: opts.priority, maxAttempts: SEND_MAX_ATTEMPTS });
      } else if (outcome.kind === 'failed' || outcome.kind === 'unconfirmed') {
        helpers.logger.warn(`email ${emailId}: ${outcome.kind === 'failed' ? outcome.error : outcome.note}`);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (err instanceof RetryableDeliveryError) helpers.logger.info(`email ${emailId}: attempt 1 of ${SEND_MAX_ATTEMPTS} failed, will retry: ${message}`);
      else helpers.logger.error(`email ${emailId}: attempt 1 of ${SEND_MAX_ATTEMPTS} failed: ${message}`);
      await queueEmailJob(
        helpers,
        { emailId, priorAttempts: 1 },
        { runAt: new Date(Date.now() + FIRST_RETRY_DELAY_MS), priority: opts.priority, maxAttempts: SEND_MAX_ATTEMPTS - 1 },
      );
    }
  }

  let next = 0;
  let failure: unknown;
  const lane = async () => {
    while (failure === undefined && next < emailIds.length) {
      const emailId = emailIds[next++] as string;
      await deliverOne(emailId).catch((err: unknown) => {
        failure ??= err;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, emailIds.length) }, lane));
  if (failure !== undefined) throw failure;
}
