import type { TaskList } from 'graphile-worker';
import { accountPasswordReset } from './account-password-reset.js';
import { analyticsCompact } from './analytics-compact.js';
import { campaignComplete } from './campaign-complete.js';
import { campaignDeliver } from './campaign-deliver.js';
import { campaignSend } from './campaign-send.js';
import { campaignSweep } from './campaign-sweep.js';
import { cleanupIdempotencyKeys } from './cleanup-idempotency-keys.js';
import { contactsBulk } from './contacts-bulk.js';
import { contactsDataIndexes } from './contacts-data-indexes.js';
import { contactsFieldDelete } from './contacts-field-delete.js';
import { contactsImport } from './contacts-import.js';
import type { JobDeps } from './deps.js';
import { domainsRecheck } from './domains-recheck.js';
import { JobPriority, Tasks } from './queue.js';
import { projectMailCancel } from './project-mail-cancel.js';
import { securityStatsCompact } from './security-stats-compact.js';
import { segmentsRecompute } from './segments-recompute.js';
import { sendBatch } from './send-batch.js';
import { createEmailDelivery, sendEmail } from './send-email.js';
import { uploadsDelete } from './uploads-delete.js';
import { webhookCleanup } from './webhook-cleanup.js';
import { webhookDeliver } from './webhook-deliver.js';
import { webhookSweep } from './webhook-sweep.js';
import { workflowCancelProject } from './workflow-cancel-project.js';
import { workflowEvents, workflowEventsSweep } from './workflow-events.js';
import { workflowStep } from './workflow-step.js';

export { JobPriority, Tasks } from './queue.js';

export function createTaskList(deps: JobDeps): TaskList {
  const delivery = createEmailDelivery(deps);
  return {
    [Tasks.accountPasswordReset]: accountPasswordReset(deps),
    [Tasks.cleanupIdempotencyKeys]: cleanupIdempotencyKeys(deps),
    [Tasks.contactsBulk]: contactsBulk(deps),
    [Tasks.contactsImport]: contactsImport(deps),
    [Tasks.contactsFieldDelete]: contactsFieldDelete(deps),
    [Tasks.sendEmail]: sendEmail(delivery),
    [Tasks.sendBatch]: sendBatch(delivery),
    [Tasks.domainsRecheck]: domainsRecheck(deps),
    [Tasks.segmentsRecompute]: segmentsRecompute(deps),
    [Tasks.contactsDataIndexes]: contactsDataIndexes(deps),
    [Tasks.campaignSend]: campaignSend(deps),
    [Tasks.campaignDeliver]: campaignDeliver(deps, delivery),
    [Tasks.campaignComplete]: campaignComplete(deps),
    [Tasks.campaignSweep]: campaignSweep(deps),
    [Tasks.workflowEvents]: workflowEvents(deps),
    [Tasks.workflowEventsSweep]: workflowEventsSweep(deps),
    [Tasks.workflowStep]: workflowStep(deps),
    [Tasks.workflowCancelProject]: workflowCancelProject(deps),
    [Tasks.projectMailCancel]: projectMailCancel(deps),
    [Tasks.securityStatsCompact]: securityStatsCompact(deps),
    [Tasks.analyticsCompact]: analyticsCompact(deps),
    [Tasks.uploadsDelete]: uploadsDelete(deps),
    [Tasks.webhookSweep]: webhookSweep(deps),
    [Tasks.webhookCleanup]: webhookCleanup(deps),
  };
}

/**
 * The tasks of the worker's separate webhook runner (src/worker.ts): outgoing webhook calls wait on
 * other people's servers (up to 10 s each), so they get slots of their own and never hold the
 * ones that send mail, run workflows or import contacts (docs/webhooks-outgoing.md "Isolation").
 */
export function createWebhookTaskList(deps: JobDeps): TaskList {
  return { [Tasks.webhookDeliver]: webhookDeliver(deps) };
}

/** Recurring jobs (graphile-worker crontab syntax). */
export const CRONTAB = [
  `*/15 * * * * ${Tasks.cleanupIdempotencyKeys} ?max=1`,
  // Own queue: runs never overlap; jobKey: a run still waiting is replaced, not doubled.
  `*/5 * * * * ${Tasks.domainsRecheck} ?max=1&queue=${Tasks.domainsRecheck}&jobKey=${Tasks.domainsRecheck}&priority=${JobPriority.maintenance}`,
  `* * * * * ${Tasks.campaignSweep} ?max=1&queue=${Tasks.campaignSweep}&jobKey=${Tasks.campaignSweep}&priority=${JobPriority.campaign}`,
  // Fan-out only; each tracked segment gets its own job keyed by its id (segments-recompute.ts).
  `*/5 * * * * ${Tasks.segmentsRecompute} ?max=1&jobKey=${Tasks.segmentsRecompute}&priority=${JobPriority.maintenance}`,
  // Data key indexes (docs/conditions.md): orphans dropped, every project's set reconciled; own queue, one DDL at a time.
  `29 * * * * ${Tasks.contactsDataIndexes} ?max=1&queue=${Tasks.contactsDataIndexes}&jobKey=${Tasks.contactsDataIndexes}&priority=${JobPriority.maintenance}`,
  // Safety net of coalesced enrolment (docs/workflows.md "Engine"): no queued event is stranded.
  `* * * * * ${Tasks.workflowEventsSweep} ?max=1&jobKey=${Tasks.workflowEventsSweep}&priority=${JobPriority.workflowSteps}`,
  // Deliverability counters: hourly buckets older than 8 days folded into per-project totals.
  `17 * * * * ${Tasks.securityStatsCompact} ?max=1&jobKey=${Tasks.securityStatsCompact}&priority=${JobPriority.maintenance}`,
  // Analytics rollups: writer shards of buckets older than an hour folded into one row each.
  `*/15 * * * * ${Tasks.analyticsCompact} ?max=1&jobKey=${Tasks.analyticsCompact}&priority=${JobPriority.maintenance}`,
  // Upload objects whose deletion failed or whose upload never committed (src/modules/uploads).
  `41 * * * * ${Tasks.uploadsDelete} ?max=1&jobKey=${Tasks.uploadsDelete}&priority=${JobPriority.maintenance}`,
  // Outgoing webhooks (src/modules/webhook-endpoints): wake endpoints a dead deliverer left; trim the log.
  `* * * * * ${Tasks.webhookSweep} ?max=1&jobKey=${Tasks.webhookSweep}&priority=${JobPriority.maintenance}`,
  `23 * * * * ${Tasks.webhookCleanup} ?max=1&jobKey=${Tasks.webhookCleanup}&priority=${JobPriority.maintenance}`,
].join('\n');
