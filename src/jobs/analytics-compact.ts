import type { Task } from 'graphile-worker';
import { compactRollups } from '../modules/analytics/index.js';
import type { JobDeps } from './deps.js';

/** Cron: folds the writer shards of analytics rollup buckets older than an hour into one row each (docs/analytics.md). */
export const analyticsCompact =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const folded = await compactRollups(deps.db);
    if (folded > 0) helpers.logger.info(`folded ${folded} analytics counter rows`);
  };
