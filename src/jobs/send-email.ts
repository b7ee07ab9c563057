import type { JobHelpers, Task } from 'graphile-worker';
import { z } from 'zod';
import { returnPathsOf } from '../modules/bounces/index.js';
import { relayHeadersOf } from '../modules/webhooks/index.js';
import { dkimSecretBox } from '../modules/domains/index.js';
import { createDelivery, type Delivery, RetryableDeliveryError } from '../modules/emails/index.js';
import type { JobDeps } from './deps.js';
import { Tasks } from './queue.js';

/**
 * `reserved`: set by the throttle when it reschedules a job that already holds its slot.
 * `priorAttempts`: attempts the email had before this job (a campaign batch's: campaign-deliver.ts),
 * counted with the job's own.
 */
export const SendEmailPayload = z.object({
  emailId: z.uuid(),
  reserved: z.boolean().optional(),
  priorAttempts: z.number().int().min(0).optional(),
});

/**
 * The worker's delivery (its shared statements, throttle and key cache): createTaskList makes one
 * for send-email and campaign-deliver alike.
 */
export function createEmailDelivery(deps: JobDeps): Delivery {
  return createDelivery({
    db: deps.db,
    tokens: deps.tokens,
    publicUrl: deps.config.publicUrl,
    mail: deps.mail,
    dkimBox: dkimSecretBox(deps.config.secret),
    sendingRates: { default: deps.config.projectSendingRate, max: deps.config.maxProjectSendingRate },
    returnPath: returnPathsOf(deps.config),
    relayHeaders: relayHeadersOf(deps.config),
    batchDb: deps.deliveryDb,
  });
}

/** Queues the send-email job of one email (keyed by its id: a queued one is replaced). */
export function queueEmailJob(
  helpers: JobHelpers,
  payload: z.infer<typeof SendEmailPayload>,
  opts: { runAt: Date; priority: number; maxAttempts: number },
): Promise<unknown> {
  return helpers.addJob(Tasks.sendEmail, payload, { jobKey: payload.emailId, ...opts });
}

/**
 * Delivers one email (src/mail/delivery.ts). Transient failures throw, so graphile-worker
 * retries with its exponential backoff (SEND_MAX_ATTEMPTS); permanent ones are recorded on the
 * email and the job ends. A throttled email is rescheduled under the same job key (the running
 * job then completes): throttling never spends an attempt.
 */
export const sendEmail =
  (delivery: Delivery): Task =>
  async (payload, helpers) => {
    const { emailId, reserved, priorAttempts = 0 } = SendEmailPayload.parse(payload);
    const { priority } = helpers.job;
    const attempts = helpers.job.attempts + priorAttempts;
    const maxAttempts = helpers.job.max_attempts + priorAttempts;
    try {
      const outcome = await delivery.deliver({ emailId, attempt: attempts, maxAttempts, reserved });
      if (outcome.kind === 'throttled') {
        await queueEmailJob(
          helpers,
          { emailId, reserved: true, ...(priorAttempts > 0 && { priorAttempts }) },
          { runAt: outcome.runAt, priority, maxAttempts: helpers.job.max_attempts },
        );
      } else if (outcome.kind === 'failed' || outcome.kind === 'unconfirmed') {
        helpers.logger.warn(`email ${emailId}: ${outcome.kind === 'failed' ? outcome.error : outcome.note}`);
      }
    } catch (err) {
      if (err instanceof RetryableDeliveryError) {
        helpers.logger.info(`email ${emailId}: attempt ${attempts} of ${maxAttempts} failed, will retry: ${err.message}`);
      } else {
        helpers.logger.error(`email ${emailId}: attempt ${attempts} of ${maxAttempts} failed: ${err instanceof Error ? err.message : String(err)}`);
        if (attempts >= maxAttempts) await delivery.giveUp(emailId, attempts, err);
      }
      throw err;
    }
  };
