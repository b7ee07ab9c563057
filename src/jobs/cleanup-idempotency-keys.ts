import type { Task } from 'graphile-worker';
import type { JobDeps } from './deps.js';
import { deleteExpiredIdempotencyKeys } from '../db/idempotency-keys.js';

/** Cron: deletes Idempotency-Key records older than IDEMPOTENCY_TTL_HOURS. */
export const cleanupIdempotencyKeys =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const deleted = await deleteExpiredIdempotencyKeys(deps.db, deps.config.idempotencyTtlHours);
    if (deleted > 0) helpers.logger.info(`deleted ${deleted} expired idempotency keys`);
  };
