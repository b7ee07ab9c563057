import type { Task } from 'graphile-worker';
import { checkCampaignCompletion, enqueueCompletionCheck } from '../modules/campaigns/index.js';
import { CampaignJobPayload } from './campaign-send.js';
import type { JobDeps } from './deps.js';

/**
 * SENDING → SENT once every email of the campaign is finished; while some are pending the
 * check is enqueued again a few seconds later (same job key). The cron sweep
 * (campaign-sweep) is the net under a lost check.
 */
export const campaignComplete = (deps: JobDeps): Task => async (payload) => {
  const { campaignId } = CampaignJobPayload.parse(payload);
  if ((await checkCampaignCompletion(deps.db, campaignId)) === 'pending') await enqueueCompletionCheck(deps.db, campaignId);
};
