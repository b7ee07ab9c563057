import type { JobHelpers, Task } from 'graphile-worker';
import { z } from 'zod';
import { CAMPAIGN_BATCH_CONCURRENCY, campaignBatchEmailIds, type Delivery, RetryableDeliveryError, SEND_MAX_ATTEMPTS } from '../modules/emails/index.js';
import type { JobDeps } from './deps.js';
import { JobPriority } from './queue.js';
import { queueEmailJob } from './send-email.js';

/** One batch of a campaign's emails: the range of their ids (campaign-emails.repo.ts queueCampaignBatches). */
export const CampaignDeliverPayload = z.object({ campaignId: z.uuid(), first: z.uuid(), last: z.uuid() });

/** graphile-worker's backoff after a first failed attempt (exp(1) seconds): an email's retry waits as its own job's would. */
const FIRST_RETRY_DELAY_MS = Math.round(Math.exp(1) * 1000);

/**
 * Delivers one batch of campaign mail (docs/campaigns.md "Delivery batches"): the batch's
 * emails still to deliver, CAMPAIGN_BATCH_CONCURRENCY at a time, through the same delivery as a
 * send-email job (exactly once per email whatever runs it: a re-run batch skips what is SENT).
 * Each email's outcome is its own: one that fails transiently, or whose delivery throws, gets a
 * send-email job of its own (its first attempt counted) and its batch-mates go on; one throttled
 * by its project's rate is rescheduled as its own job holding its slot. The batch job fails
 * (and is retried whole) only when such a job cannot be queued.
 */
export const campaignDeliver = (deps: JobDeps, delivery: Delivery): Task => {

  async function deliverOne(emailId: string, helpers: JobHelpers): Promise<void> {
    try {
      const outcome = await delivery.deliver({ emailId, attempt: 1, maxAttempts: SEND_MAX_ATTEMPTS });
      if (outcome.kind === 'throttled') {
        await queueEmailJob(helpers, { emailId, reserved: true }, { runAt: outcome.runAt, priority: JobPriority.campaign, maxAttempts: SEND_MAX_ATTEMPTS });
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
        { runAt: new Date(Date.now() + FIRST_RETRY_DELAY_MS), priority: JobPriority.campaign, maxAttempts: SEND_MAX_ATTEMPTS - 1 },
      );
    }
  }

  return async (payload, helpers) => {
    const batch = CampaignDeliverPayload.parse(payload);
    const ids = await campaignBatchEmailIds(deps.db, batch);
    let next = 0;
    let failure: unknown;
    const lane = async () => {
      while (failure === undefined && next < ids.length) {
        const emailId = ids[next++] as string;
        await deliverOne(emailId, helpers).catch((err: unknown) => {
          failure ??= err;
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(CAMPAIGN_BATCH_CONCURRENCY, ids.length) }, lane));
    if (failure !== undefined) throw failure;
  };
};
