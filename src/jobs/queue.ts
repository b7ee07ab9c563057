/**
 * Task names and queue priorities, apart from `index.ts` so that modules enqueuing jobs
 * (`SELECT graphile_worker.add_job(...)`) can import them without importing every task.
 */

/** Task names, used when enqueuing and in the crontab. */
export const Tasks = {
  /** POST /auth/request-password-reset's lookup and email, off the request (src/modules/accounts). */
  accountPasswordReset: 'account-password-reset',
  cleanupIdempotencyKeys: 'cleanup-idempotency-keys',
  contactsBulk: 'contacts-bulk',
  contactsImport: 'contacts-import',
  contactsFieldDelete: 'contacts-field-delete',
  sendEmail: 'send-email',
  /** Delivers the emails of one POST /v1/send batch (`{projectId, emailIds}`): src/jobs/send-batch.ts. */
  sendBatch: 'send-batch',
  domainsRecheck: 'domains-recheck',
  segmentsRecompute: 'segments-recompute',
  /** Builds/drops a project's data key indexes (`{projectId}`, keyed per project), or sweeps all of them (cron): src/modules/segments/data-indexes.ts. */
  contactsDataIndexes: 'contacts-data-indexes',
  campaignSend: 'campaign-send',
  /** Delivers one batch of a campaign's emails (`{campaignId, first, last}`: a range of their ids): src/jobs/campaign-deliver.ts. */
  campaignDeliver: 'campaign-deliver',
  campaignComplete: 'campaign-complete',
  campaignSweep: 'campaign-sweep',
  /** Enrols contacts and resumes waits for committed events (the events trigger's queue, keyed job per project: migration 0018). */
  workflowEvents: 'workflow-events',
  /** Cron: re-enqueues the workflow-events job of projects whose queued events wait longer than a minute. */
  workflowEventsSweep: 'workflow-events-sweep',
  /** Runs a batch of step executions of one workflow step (src/modules/workflows/engine). */
  workflowStep: 'workflow-step',
  /** Cancels the active executions of a project that was disabled (src/modules/workflows/engine/cancel.ts). */
  workflowCancelProject: 'workflow-cancel-project',
  /** Cancels the PENDING emails of a project that was disabled (src/modules/security, emails/project-cancel.repo.ts). */
  projectMailCancel: 'project-mail-cancel',
  /** Cron: folds deliverability counter buckets older than 8 days (src/modules/security). */
  securityStatsCompact: 'security-stats-compact',
  /** Cron: folds the writer shards of analytics rollup buckets older than an hour (src/modules/analytics). */
  analyticsCompact: 'analytics-compact',
  /**
   * Removes the storage objects queued in upload_deletions (src/modules/uploads): deleted
   * uploads, reset and deleted projects, uploads that never committed. Keyed; also hourly (cron).
   */
  uploadsDelete: 'uploads-delete',
  /**
   * Delivers an endpoint's due webhook deliveries (src/modules/webhook-endpoints): one job per
   * endpoint (keys `webhook-deliver:<id>`, added by the capture triggers of migration 0028, and
   * `webhook-retry:<id>`, the next retry), run by the worker's separate webhook runner.
   */
  webhookDeliver: 'webhook-deliver',
  /** Cron: wakes endpoints whose due deliveries have no job (a deliverer that died). */
  webhookSweep: 'webhook-sweep',
  /** Cron: deletes finished webhook deliveries past the log's retention. */
  webhookCleanup: 'webhook-cleanup',
} as const;
export type TaskName = (typeof Tasks)[keyof typeof Tasks];

/**
 * graphile-worker runs ready jobs in ascending `priority` (then by run_at), so a smaller number
 * runs first (DESIGN §8). Transactional mail never waits behind anything; contact jobs (imports,
 * bulk changes, field deletes) are bounded (1,000 ids, 5 MB) and run before campaign fan-out, so
 * a bulk-unsubscribe takes effect before a queued campaign reaches those contacts.
 */
export const JobPriority = {
  /**
   * The instance's own account mail (verification, password reset, invitations, project
   * notices: `queueSystemEmail`): a person is waiting at the sign-in page, and a project's
   * /v1/send burst must not hold it back.
   */
  system: -10,
  /** /v1/send and other mail a person is waiting for (receipts, one-time codes). */
  transactional: 0,
  /**
   * Workflow enrolment and step jobs (`workflow-events`, `workflow-step`): short database work on
   * at most 500 executions each, which produces the workflow mail. Ahead of that mail so that a
   * delivery backlog (the SMTP relay's pace) never holds executions at a step: at equal priority
   * the steps queued behind thousands of send-email jobs and a 1-minute DELAY began minutes late.
   * The mail waits only while step jobs are ready, and each of those is bounded.
   */
  workflowSteps: 5,
  /** Workflow mail (SEND_EMAIL steps' emails). */
  workflow: 10,
  /** Imports, bulk subscribe/unsubscribe/delete, field deletes. */
  contacts: 20,
  /** Campaign fan-out and campaign mail. */
  campaign: 30,
  /** Housekeeping that may wait (cleanups). */
  maintenance: 40,
} as const;
