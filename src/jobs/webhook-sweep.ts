import type { Task } from 'graphile-worker';
import { wakeStrandedEndpoints } from '../modules/webhook-endpoints/index.js';
import type { JobDeps } from './deps.js';

/** Cron (every minute): wakes endpoints whose due deliveries have no deliverer (one died mid-run). */
export const webhookSweep =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const woken = await wakeStrandedEndpoints(deps.db);
    if (woken > 0) helpers.logger.info(`woke ${woken} webhook endpoints with stranded deliveries`);
  };
