import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { handleStartFailure, runCampaignSend } from '../modules/campaigns/index.js';
import type { JobDeps } from './deps.js';

export const CampaignJobPayload = z.object({ campaignId: z.uuid() });

/**
 * Starts a campaign: a due SCHEDULED one becomes SENDING, then its recipients are materialised
 * with their delivery batch jobs (src/modules/campaigns/fanout.ts). Idempotent: keyed per
 * campaign, and a re-run finds the campaign materialised and does nothing. A failure that retrying cannot fix (the
 * stored audience cannot be evaluated), or the last of its bounded attempts, ends the campaign
 * CANCELLED with the reason and completes the job; other failures throw (retried with backoff).
 */
export const campaignSend = (deps: JobDeps): Task => async (payload, helpers) => {
  const { campaignId } = CampaignJobPayload.parse(payload);
  const { attempts, max_attempts: maxAttempts } = helpers.job;
  try {
    const outcome = await runCampaignSend(deps.db, campaignId, deps.config.billing);
    if (outcome.kind === 'materialised') helpers.logger.info(`campaign ${campaignId}: ${outcome.recipients} recipients materialised`);
  } catch (err) {
    const cause = err instanceof Error ? err.message : String(err);
    const handled = await handleStartFailure(deps.db, campaignId, err, { attempt: attempts, maxAttempts });
    if (handled.kind === 'retry') {
      helpers.logger.warn(`campaign ${campaignId}: start attempt ${attempts} failed, will retry: ${cause}`);
      throw err;
    }
    const what = handled.changed ? `cancelled (${handled.failure.code})` : 'was no longer active';
    helpers.logger.error(`campaign ${campaignId}: start attempt ${attempts} failed, campaign ${what}: ${cause}`);
  }
};
