import type { TaskList } from 'graphile-worker';
import { cleanupIdempotencyKeys } from './cleanup-idempotency-keys.js';
import { contactsBulk } from './contacts-bulk.js';
import { contactsFieldDelete } from './contacts-field-delete.js';
import { contactsImport } from './contacts-import.js';
import type { JobDeps } from './deps.js';
import { Tasks } from './queue.js';

export { JobPriority, Tasks } from './queue.js';

export function createTaskList(deps: JobDeps): TaskList {
  return {
    [Tasks.cleanupIdempotencyKeys]: cleanupIdempotencyKeys(deps),
    [Tasks.contactsBulk]: contactsBulk(deps),
    [Tasks.contactsImport]: contactsImport(deps),
    [Tasks.contactsFieldDelete]: contactsFieldDelete(deps),
  };
}

/** Recurring jobs (graphile-worker crontab syntax). */
export const CRONTAB = [`*/15 * * * * ${Tasks.cleanupIdempotencyKeys} ?max=1`].join('\n');
