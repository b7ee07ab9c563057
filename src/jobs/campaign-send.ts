import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { runCampaignSend } from '../modules/campaigns/fanout.js';
import type { JobDeps } from './deps.js';

export const CampaignJobPayload = z.object({ campaignId: z.uuid() });

/**
 * Starts a campaign: a due SCHEDULED one becomes SENDING, then its recipients are materialised
 * with their send-email jobs (src/modules/campaigns/fanout.ts). Idempotent: keyed per campaign,
 * and a re-run finds the email rows and does nothing. Failures throw (retried by graphile-worker).
 */
export const campaignSend = (deps: JobDeps): Task => async (payload, helpers) => {
  const { campaignId } = CampaignJobPayload.parse(payload);
  const outcome = await runCampaignSend(deps.db, campaignId);
  if (outcome.kind === 'materialised') helpers.logger.info(`campaign ${campaignId}: ${outcome.recipients} recipients materialised`);
};
