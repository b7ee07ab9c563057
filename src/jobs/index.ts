import type { TaskList } from 'graphile-worker';
import { cleanupIdempotencyKeys } from './cleanup-idempotency-keys.js';
import { contactsBulk } from './contacts-bulk.js';
import { contactsFieldDelete } from './contacts-field-delete.js';
import { contactsImport } from './contacts-import.js';
import type { JobDeps } from './deps.js';
import { domainsRecheck } from './domains-recheck.js';
import { JobPriority, Tasks } from './queue.js';
import { sendEmail } from './send-email.js';

export { JobPriority, Tasks } from './queue.js';

export function createTaskList(deps: JobDeps): TaskList {
  return {
    [Tasks.cleanupIdempotencyKeys]: cleanupIdempotencyKeys(deps),
    [Tasks.contactsBulk]: contactsBulk(deps),
    [Tasks.contactsImport]: contactsImport(deps),
    [Tasks.contactsFieldDelete]: contactsFieldDelete(deps),
    [Tasks.sendEmail]: sendEmail(deps),
    [Tasks.domainsRecheck]: domainsRecheck(deps),
  };
}

/** Recurring jobs (graphile-worker crontab syntax). */
export const CRONTAB = [
  `*/15 * * * * ${Tasks.cleanupIdempotencyKeys} ?max=1`,
  // Own queue: runs never overlap; jobKey: a run still waiting is replaced, not doubled.
  `*/5 * * * * ${Tasks.domainsRecheck} ?max=1&queue=${Tasks.domainsRecheck}&jobKey=${Tasks.domainsRecheck}&priority=${JobPriority.maintenance}`,
].join('\n');
