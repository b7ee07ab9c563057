/**
 * The emails module's facade: the only way other modules, jobs, the CLI and the app touch
 * email rows (and the outbox). The module owns every write to `emails` and its lifecycle:
 * creating rows (/v1/send, test sends, workflow steps), materialising a campaign's audience,
 * cancelling, delivering (delivery/), recording milestones, and the reads others need (stats,
 * lookups by Message-ID).
 */


// Creating emails: ids chosen first (Message-IDs and links carry them), rows, then their jobs.
export { allocateEmailIds, enqueueEmails, type EnqueueOptions, insertEmails, type NewEmail, SEND_MAX_ATTEMPTS } from './emails.repo.js';
export { enqueueSendBatch, SEND_BATCH_CONCURRENCY, SEND_BATCH_MAX_ATTEMPTS } from './send-batches.repo.js';
export { blockedReason, UNSUBSCRIBED_MARKETING } from './rules.js';
export { queueTestEmail, type TestEmailDeps, type TestEmailInput } from './test-emails.js';

// Campaigns: the rows of an audience, cancel, completion conditions, the net under lost jobs, stats.
export {
  type CampaignAudience,
  CAMPAIGN_BATCH_CONCURRENCY,
  CAMPAIGN_BATCH_SIZE,
  CAMPAIGN_LANES,
  campaignBatchEmailIds,
  type CampaignEmailCounts,
  campaignHasUnfinishedEmailsSql,
  cancelPendingCampaignEmails,
  countCampaignEmails,
  insertCampaignEmails,
  insertCampaignEmailsPart,
  MATERIALISE_PARTS,
  queueCampaignBatches,
  recoverStalledCampaignEmails,
  STALLED_EMAIL_AFTER,
} from './campaign-emails.repo.js';

// The instance's own account mail (verification, reset, invitations, notices): no project, highest priority.
export { configureSystemEmail, queueSystemEmail, type SystemEmail, type SystemEmailKind } from './system-emails.js';

// Workflows: a SEND_EMAIL step's email, and per-step stats.
export {
  queueTemplateEmail,
  queueTemplateEmails,
  TEMPLATE_EMPTY,
  type WorkflowEmailInput,
  type WorkflowEmailItem,
  type WorkflowEmailResult,
  type WorkflowEmailsInput,
} from './workflow-emails.js';
export { countWorkflowStepEmails, type StepEmailCounts } from './workflow-emails.repo.js';

// A suspended project's queued mail (src/modules/security).
export { cancelPendingEmailsOfDisabledProject, enqueueProjectMailCancel } from './project-cancel.repo.js';
// GET /metrics (src/modules/system).
export { countPendingEmails } from './project-cancel.repo.js';

// After sending: milestones (never downgrading), the relay's notifications, clicks.
export { type OpenSignal, recordMilestone, STATUS_EVENT, STATUS_RANK, type StatusChange, type TrackedStatus } from './status.js';
export { type BatchStatus, type MilestoneInput, recordMilestones } from './milestones.repo.js';
export { type FeedbackEmail, findEmailByMessageIds, findEmailsByIds, lockEmailForClick, noteSoftBounce } from './feedback.repo.js';

// Delivery (the send-email job) and the capture outbox (the admin CLI).
export {
  CompositionError,
  createDelivery,
  type Delivery,
  type DeliveryDeps,
  type DeliveryHooks,
  type DeliveryJob,
  type DeliveryOutcome,
  NO_REPLY_NOTE,
  RESENT_NOTE,
  RetryableDeliveryError,
  UNCONFIRMED_NOTE,
} from './delivery/delivery.js';
export { CAMPAIGN_CONTACT_GONE, CAMPAIGN_UNSUBSCRIBED } from './delivery/personalise.js';
export { findCapturedMessage, listOutbox, type OutboxEntry } from './outbox.repo.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { sendRoutes } from './send.routes.js';
export { emailsRoutes } from './emails.routes.js';
