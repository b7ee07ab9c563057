import type { TaskList } from 'graphile-worker';
import { cleanupIdempotencyKeys } from './cleanup-idempotency-keys.js';
import type { JobDeps } from './deps.js';

/** Task names, used when enqueuing (SQL `graphile_worker.add_job`) and in the crontab. */
export const Tasks = {
  cleanupIdempotencyKeys: 'cleanup-idempotency-keys',
} as const;

export function createTaskList(deps: JobDeps): TaskList {
  return {
    [Tasks.cleanupIdempotencyKeys]: cleanupIdempotencyKeys(deps),
  };
}

/** Recurring jobs (graphile-worker crontab syntax). */
export const CRONTAB = [`*/15 * * * * ${Tasks.cleanupIdempotencyKeys} ?max=1`].join('\n');
