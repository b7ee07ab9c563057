import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { CAMPAIGN_BATCH_CONCURRENCY, campaignBatchEmailIds, type Delivery } from '../modules/emails/index.js';
import { deliverEach } from './deliver-each.js';
import type { JobDeps } from './deps.js';
import { JobPriority } from './queue.js';

/** One batch of a campaign's emails: the range of their ids (campaign-emails.repo.ts queueCampaignBatches). */
export const CampaignDeliverPayload = z.object({ campaignId: z.uuid(), first: z.uuid(), last: z.uuid() });

/**
 * Delivers one batch of campaign mail (docs/campaigns.md "Delivery batches"): the batch's
 * emails still to deliver, CAMPAIGN_BATCH_CONCURRENCY at a time ({@link deliverEach}: each
 * email's outcome is its own).
 */
export const campaignDeliver =
  (deps: JobDeps, delivery: Delivery): Task =>
  async (payload, helpers) => {
    const ids = await campaignBatchEmailIds(deps.db, CampaignDeliverPayload.parse(payload));
    await deliverEach(delivery, ids, helpers, { priority: JobPriority.campaign, concurrency: CAMPAIGN_BATCH_CONCURRENCY });
  };
