import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { returnPathsOf } from '../modules/bounces/index.js';
import { relayHeadersOf } from '../modules/webhooks/index.js';
import { dkimSecretBox } from '../modules/domains/index.js';
import { createDelivery, RetryableDeliveryError } from '../modules/emails/index.js';
import type { JobDeps } from './deps.js';
import { Tasks } from './queue.js';

/** `reserved`: set by the throttle when it reschedules a job that already holds its slot. */
export const SendEmailPayload = z.object({ emailId: z.uuid(), reserved: z.boolean().optional() });

/**
 * Delivers one email (src/mail/delivery.ts). Transient failures throw, so graphile-worker
 * retries with its exponential backoff (SEND_MAX_ATTEMPTS); permanent ones are recorded on the
 * email and the job ends. A throttled email is rescheduled under the same job key (the running
 * job then completes): throttling never spends an attempt.
 */
export const sendEmail = (deps: JobDeps): Task => {
  const delivery = createDelivery({
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
  return async (payload, helpers) => {
    const { emailId, reserved } = SendEmailPayload.parse(payload);
    const { attempts, max_attempts: maxAttempts, priority } = helpers.job;
    try {
      const outcome = await delivery.deliver({ emailId, attempt: attempts, maxAttempts, reserved });
      if (outcome.kind === 'throttled') {
        await helpers.addJob(Tasks.sendEmail, { emailId, reserved: true }, { jobKey: emailId, runAt: outcome.runAt, priority, maxAttempts });
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
};
