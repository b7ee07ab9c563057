import type { Task } from 'graphile-worker';
import { compactEmailStats } from '../modules/security/index.js';
import type { JobDeps } from './deps.js';

/** Cron: folds deliverability counter buckets older than 8 days into per-project totals (docs/security.md). */
export const securityStatsCompact =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const folded = await compactEmailStats(deps.db);
    if (folded > 0) helpers.logger.info(`folded ${folded} deliverability counter buckets`);
  };
