import type { Task } from 'graphile-worker';
import { DELIVERY_LOG_RETENTION_DAYS, deleteOldDeliveries } from '../modules/webhook-endpoints/index.js';
import type { JobDeps } from './deps.js';

/** Cron (hourly): deletes finished webhook deliveries older than DELIVERY_LOG_RETENTION_DAYS. */
export const webhookCleanup =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const deleted = await deleteOldDeliveries(deps.db, new Date(Date.now() - DELIVERY_LOG_RETENTION_DAYS * 24 * 60 * 60 * 1000));
    if (deleted > 0) helpers.logger.info(`deleted ${deleted} webhook deliveries past the log's retention`);
  };
