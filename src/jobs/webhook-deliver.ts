import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { deliverEndpoint, endpointSecretBox } from '../modules/webhook-endpoints/index.js';
import type { JobDeps } from './deps.js';

export const WebhookDeliverPayload = z.object({ projectId: z.uuid(), endpointId: z.uuid() });

/**
 * Delivers one endpoint's due webhook deliveries (src/modules/webhook-endpoints/deliver.ts):
 * bounded in time (20 s of batches) and queueing its own next run. Runs in the worker's webhook
 * runner (src/worker.ts), apart from the mail jobs: a slow endpoint never holds a sending slot.
 * The endpoint's failures are recorded, never thrown; a database error throws (retried).
 */
export const webhookDeliver = (deps: JobDeps): Task => {
  const d = { db: deps.db, box: endpointSecretBox(deps.config.secret), allowPrivate: deps.config.webhookAllowPrivate };
  return async (payload, helpers) => {
    const { projectId, endpointId } = WebhookDeliverPayload.parse(payload);
    const run = await deliverEndpoint(d, { projectId, endpointId, signal: helpers.abortSignal });
    if (run.disabled) helpers.logger.warn(`webhook endpoint ${endpointId} of project ${projectId} disabled after 24 hours of failed deliveries`);
  };
};
