import type { Task } from 'graphile-worker';
import { sweepCampaigns } from '../modules/campaigns/index.js';
import type { JobDeps } from './deps.js';

/** Every minute: no campaign stays SENDING once its emails are finished, whatever crashed. */
export const campaignSweep = (deps: JobDeps): Task => async (_payload, helpers) => {
  const { completed, restarted, recovered } = await sweepCampaigns(deps.db);
  if (completed + restarted + recovered > 0) {
    helpers.logger.info(`campaign sweep: ${completed} completed, ${restarted} restarted, ${recovered} stalled emails recovered`);
  }
};
