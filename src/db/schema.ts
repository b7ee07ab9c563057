import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

/** A timestamptz: read as Date, written as Date or ISO string, defaulted by the database. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export const PROJECT_ROLES = ['OWNER', 'ADMIN', 'MEMBER'] as const;
export type ProjectRole = (typeof PROJECT_ROLES)[number];

export const TRACKING_MODES = ['ENABLED', 'DISABLED', 'MARKETING_ONLY'] as const;
export type TrackingMode = (typeof TRACKING_MODES)[number];

export interface UsersTable {
  id: Generated<string>;
  email: string;
  password_hash: string | null;
  is_admin: Generated<boolean>;
  email_verified_at: Date | null;
  sessions_valid_after: Timestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Failed sign-ins of one email (migration 0013); `key` is SHA-256 of the normalised address. */
export interface LoginThrottlesTable {
  key: Buffer;
  failures: number;
  last_failure_at: Timestamp;
  locked_until: Date | null;
}

export const OAUTH_PROVIDERS = ['github', 'google'] as const;
export type OAuthProviderName = (typeof OAUTH_PROVIDERS)[number];

/** A provider account linked to a user (migration 0022); unique per provider account and per (user, provider). */
export interface OAuthIdentitiesTable {
  provider: OAuthProviderName;
  provider_user_id: string;
  user_id: string;
  email: string;
  created_at: Timestamp;
  last_sign_in_at: Timestamp;
}

/** Emailed one-time tokens of the verify / password-reset flows (migration 0021); only their SHA-256 is kept. */
export interface AccountTokensTable {
  id: Generated<string>;
  user_id: string;
  purpose: 'verify-email' | 'password-reset';
  token_hash: Buffer;
  /** The address the token was sent to. */
  email: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: Date | null;
  created_at: Timestamp;
}

/** Sessions ended by logout (their JWT `jti`), kept until the token expires (migration 0013). */
export interface EndedSessionsTable {
  id: string;
  expires_at: Timestamp;
}

export interface ProjectsTable {
  id: Generated<string>;
  name: string;
  public_key: string;
  secret_key: string;
  disabled: Generated<boolean>;
  disabled_reason: ColumnType<string | null, string | null | undefined, string | null>;
  disabled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  tracking: ColumnType<TrackingMode, TrackingMode | undefined, TrackingMode>;
  /** Signs WEBHOOK step calls (`whsec_…`, migration 0015); readable and rotatable by admins. */
  webhook_secret: ColumnType<string, string | undefined, string>;
  /** Emails per second (migration 0024); null = the instance default. */
  sending_rate: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The shared sending throttle: one GCRA arrival time per project (migration 0024). */
export interface ProjectSendSlotsTable {
  project_id: string;
  tat: Date;
}

export interface MembershipsTable {
  project_id: string;
  user_id: string;
  role: ProjectRole;
  created_at: Timestamp;
}

export const INVITATION_STATUSES = ['PENDING', 'ADDED', 'ACCEPTED', 'REVOKED'] as const;
export type InvitationStatus = (typeof INVITATION_STATUSES)[number];

/** Invitations to a project, kept as history (migration 0023, docs/members.md). */
export interface ProjectInvitationsTable {
  id: Generated<string>;
  project_id: string;
  email: string;
  role: ProjectRole;
  status: InvitationStatus;
  /** SHA-256 of the emailed token; null for ADDED rows (an existing user joined at once). */
  token_hash: Buffer | null;
  invited_by: string | null;
  accepted_by: ColumnType<string | null, string | null | undefined, string | null>;
  expires_at: Date;
  closed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: Timestamp;
}

export interface IdempotencyKeysTable {
  project_id: string;
  key: string;
  method: string;
  path: string;
  status_code: number;
  created_at: Timestamp;
}

/** A value stored in contact data: primitives only (DESIGN: data rules). */
export type DataValue = string | number | boolean;
export type ContactData = Record<string, DataValue>;

export interface ContactsTable {
  id: Generated<string>;
  project_id: string;
  email: string;
  subscribed: boolean;
  data: ColumnType<ContactData, ContactData | string | undefined, ContactData | string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EventsTable {
  id: Generated<string>;
  project_id: string;
  contact_id: string;
  name: string;
  data: ColumnType<Record<string, unknown>, Record<string, unknown> | string | undefined, Record<string, unknown> | string>;
  created_at: Timestamp;
}

export const JOB_STATUSES = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export interface JobRowError {
  row: number;
  message: string;
}

export interface JobsTable {
  id: Generated<string>;
  project_id: string;
  kind: string;
  status: ColumnType<JobStatus, JobStatus | undefined, JobStatus>;
  total: ColumnType<number, number | undefined, number>;
  processed: ColumnType<number, number | undefined, number>;
  failed: ColumnType<number, number | undefined, number>;
  errors: ColumnType<JobRowError[], string | undefined, string>;
  payload: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  users: UsersTable;
  login_throttles: LoginThrottlesTable;
  ended_sessions: EndedSessionsTable;
  account_tokens: AccountTokensTable;
  oauth_identities: OAuthIdentitiesTable;
  projects: ProjectsTable;
  project_send_slots: ProjectSendSlotsTable;
  memberships: MembershipsTable;
  project_invitations: ProjectInvitationsTable;
  idempotency_keys: IdempotencyKeysTable;
  contacts: ContactsTable;
  events: EventsTable;
  jobs: JobsTable;
  import_chunks: ImportChunksTable;
  domains: DomainsTable;
  templates: TemplatesTable;
  attachment_sets: AttachmentSetsTable;
  emails: EmailsTable;
  outbox: OutboxTable;
  segments: SegmentsTable;
  segment_members: SegmentMembersTable;
  campaigns: CampaignsTable;
  worker_heartbeats: WorkerHeartbeatsTable;
  suppressions: SuppressionsTable;
  project_email_stats: ProjectEmailStatsTable;
  project_suspensions: ProjectSuspensionsTable;
  workflows: WorkflowsTable;
  workflow_steps: WorkflowStepsTable;
  workflow_transitions: WorkflowTransitionsTable;
  workflow_executions: WorkflowExecutionsTable;
  workflow_step_executions: WorkflowStepExecutionsTable;
  workflow_enrolments: WorkflowEnrolmentsTable;
  workflow_event_queue: WorkflowEventQueueTable;
  project_billing: ProjectBillingTable;
  analytics_email_counts: AnalyticsEmailCountsTable;
  analytics_campaign_counts: AnalyticsCampaignCountsTable;
  analytics_event_counts: AnalyticsEventCountsTable;
  analytics_event_daily: AnalyticsEventDailyTable;
  billing_usage: BillingUsageTable;
  billing_events: BillingEventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  uploads: UploadsTable;
  upload_deletions: UploadDeletionsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type ProjectRow = Selectable<ProjectsTable>;
export type ContactRow = Selectable<ContactsTable>;
export type EventRow = Selectable<EventsTable>;
export type JobRow = Selectable<JobsTable>;
export type NewProjectRow = Insertable<ProjectsTable>;

/** One piece of an uploaded CSV file of an import job, in upload order (`seq` from 0). */
export interface ImportChunksTable {
  job_id: string;
  project_id: string;
  seq: number;
  data: Buffer;
}

export const EMAIL_TYPES = ['TRANSACTIONAL', 'MARKETING', 'HEADLESS'] as const;
export type EmailType = (typeof EMAIL_TYPES)[number];

export interface DomainRecord {
  type: 'TXT';
  name: string;
  value: string;
  purpose: 'DKIM' | 'SPF' | 'DMARC';
  required: boolean;
  verified: boolean;
  error?: string;
}

export interface DomainsTable {
  id: Generated<string>;
  project_id: string;
  domain: string;
  dkim_selector: string;
  dkim_public_key: string;
  dkim_private_key: string;
  verified: Generated<boolean>;
  verified_at: Date | null;
  last_checked_at: Date | null;
  records: ColumnType<DomainRecord[], string | undefined, string>;
  /** Migration 0033: mail to this domain (and its subdomains) is received (docs/bounces.md "Inbound mail"). */
  inbound_enabled: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TemplatesTable {
  id: Generated<string>;
  project_id: string;
  name: ColumnType<string, string | undefined, string>;
  description: ColumnType<string, string | undefined, string>;
  subject: ColumnType<string, string | undefined, string>;
  body: ColumnType<string, string | undefined, string>;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  type: ColumnType<EmailType, EmailType | undefined, EmailType>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** One stored attachment: base64 content as sent to /v1/send. */
export interface StoredAttachment {
  filename: string;
  contentType: string;
  cid?: string;
  content: string;
}

export interface AttachmentSetsTable {
  id: Generated<string>;
  project_id: string;
  items: ColumnType<StoredAttachment[], string, string>;
  created_at: Timestamp;
}

export const EMAIL_STATUSES = [
  'PENDING',
  'SENDING',
  'SENT',
  'DELIVERED',
  'OPENED',
  'CLICKED',
  'BOUNCED',
  'COMPLAINED',
  'FAILED',
  'CANCELLED',
] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];
export const EMAIL_SOURCES = ['SEND', 'CAMPAIGN', 'WORKFLOW', 'TEST'] as const;
export type EmailSource = (typeof EMAIL_SOURCES)[number];

/** The instance's own account mail (migration 0021): no project, delivered by the same code. */
export const SYSTEM_SOURCE = 'SYSTEM';

/**
 * The `projects` row that owns SYSTEM emails (migration 0039): every tenant row names a project,
 * as a table distributed by `project_id` requires (docs/scaling.md). Disabled, with keys nobody
 * holds and no members; never listed, and mapped back to "no project" where emails are read.
 */
export const INSTANCE_PROJECT_ID = '00000000-0000-0000-0000-000000000000';

export interface EmailsTable {
  id: Generated<string>;
  /** INSTANCE_PROJECT_ID exactly for SYSTEM emails (they belong to no project). */
  project_id: string;
  contact_id: string | null;
  source: EmailSource | typeof SYSTEM_SOURCE;
  /** SYSTEM emails: what they are (verify-email, password-reset, invitation, …); null otherwise. */
  system_kind: ColumnType<string | null, string | null | undefined, string | null>;
  /** SYSTEM emails: the project they are about, if any (no foreign key). */
  system_project_id: ColumnType<string | null, string | null | undefined, string | null>;
  type: EmailType;
  campaign_id: string | null;
  template_id: string | null;
  to_email: string;
  to_name: string | null;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  subject: string;
  html: string;
  text: string | null;
  headers: ColumnType<Record<string, string>, string | undefined, string>;
  attachment_set_id: string | null;
  status: ColumnType<EmailStatus, EmailStatus | undefined, EmailStatus>;
  message_id: string;
  error: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  /** Set (committed) right before the current SMTP attempt's final dot; null before that (migration 0012). */
  end_of_data_at: Date | null;
  /** SENT without the relay's 250: the worker died after the final dot (docs/sending.md). */
  unconfirmed: ColumnType<boolean, boolean | undefined, boolean>;
  sent_at: Date | null;
  delivered_at: Date | null;
  opened_at: Date | null;
  clicked_at: Date | null;
  bounced_at: Date | null;
  complained_at: Date | null;
  failed_at: Date | null;
  /** The workflow run and SEND_EMAIL step that created this email (migration 0015); unique together. */
  workflow_execution_id: ColumnType<string | null, string | null | undefined, string | null>;
  workflow_step_id: ColumnType<string | null, string | null | undefined, string | null>;
  open_count: ColumnType<number, number | undefined, number>;
  click_count: ColumnType<number, number | undefined, number>;
  /** The first open judged a person's, or implied by a click (migration 0029; docs/analytics.md "Machine opens"). */
  human_opened_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Opens judged a machine's (privacy proxies, prefetchers, scanners). */
  machine_open_count: ColumnType<number, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface OutboxTable {
  id: Generated<string>;
  /** INSTANCE_PROJECT_ID for SYSTEM emails. */
  project_id: string;
  email_id: string;
  message_id: string;
  envelope_from: string;
  envelope_to: string;
  /** The subject as sent (rendered); null on messages captured before migration 0009. */
  subject: string | null;
  raw: Buffer;
  created_at: Timestamp;
}

export type DomainRow = Selectable<DomainsTable>;
export type TemplateRow = Selectable<TemplatesTable>;
export type EmailRow = Selectable<EmailsTable>;

/** A condition tree as stored (validated by src/conditions before it is saved). */
export type StoredCondition = Record<string, unknown>;

export const SEGMENT_TYPES = ['DYNAMIC', 'STATIC'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

export interface SegmentsTable {
  id: Generated<string>;
  project_id: string;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  type: ColumnType<SegmentType, SegmentType | undefined, SegmentType>;
  condition: ColumnType<StoredCondition | null, string | null | undefined, string | null>;
  track_membership: ColumnType<boolean, boolean | undefined, boolean>;
  member_count: ColumnType<number, number | undefined, number>;
  /** When member_count was last counted (any path); a members page reuses a fresh count. */
  counted_at: Date | null;
  /** When the condition last changed: a count made before it is not this segment's. */
  condition_changed_at: Generated<Date>;
  computed_at: Date | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SegmentMembersTable {
  segment_id: string;
  project_id: string;
  contact_id: string;
  created_at: Timestamp;
}

export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
/** Why a campaign is CANCELLED (docs/campaigns.md): by a caller, or by the service when its send job cannot proceed. */
export const CAMPAIGN_STATUS_REASONS = ['CANCELLED_BY_USER', 'AUDIENCE_UNUSABLE', 'START_FAILED', 'BILLING_LIMIT_REACHED'] as const;
export type CampaignStatusReason = (typeof CAMPAIGN_STATUS_REASONS)[number];
export const AUDIENCE_TYPES = ['ALL', 'SEGMENT', 'FILTERED'] as const;
export type AudienceType = (typeof AUDIENCE_TYPES)[number];

export interface CampaignsTable {
  id: Generated<string>;
  project_id: string;
  name: ColumnType<string, string | undefined, string>;
  description: ColumnType<string, string | undefined, string>;
  subject: ColumnType<string, string | undefined, string>;
  body: ColumnType<string, string | undefined, string>;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  type: ColumnType<EmailType, EmailType | undefined, EmailType>;
  status: ColumnType<CampaignStatus, CampaignStatus | undefined, CampaignStatus>;
  audience_type: ColumnType<AudienceType, AudienceType | undefined, AudienceType>;
  audience_condition: ColumnType<StoredCondition | null, string | null | undefined, string | null>;
  segment_id: string | null;
  scheduled_for: Date | null;
  total_recipients: ColumnType<number, number | undefined, number>;
  sent_at: Date | null;
  /** When it became SENDING (migration 0031): the start of its insight's default range. */
  started_at: ColumnType<Date | null, never, Date | null>;
  cancelled_at: Date | null;
  status_reason: CampaignStatusReason | null;
  status_message: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type SegmentRow = Selectable<SegmentsTable>;
export type CampaignRow = Selectable<CampaignsTable>;

/** One running job worker process (src/jobs/liveness.ts); `worker_id` is graphile-worker's pool id. */
export interface WorkerHeartbeatsTable {
  worker_id: string;
  host: string;
  pid: number;
  started_at: Generated<Date>;
  beat_at: Generated<Date>;
}

export const SUPPRESSION_REASONS = ['HARD_BOUNCE', 'COMPLAINT', 'MANUAL'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** An address the project never delivers to (migration 0014; src/modules/suppressions). */
export interface SuppressionsTable {
  project_id: string;
  /** Lower-cased, like contacts.email. */
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  source_email_id: string | null;
  created_at: Timestamp;
}
export type SuppressionRow = Selectable<SuppressionsTable>;

/** Hourly (UTC) counts of a project's sends, hard bounces and complaints, kept by triggers on emails (migration 0025; src/modules/security). */
export interface ProjectEmailStatsTable {
  project_id: string;
  /** The hour's start; `-infinity` for the folded totals of buckets older than 8 days. */
  bucket: Date;
  shard: number;
  sent: number;
  bounced: number;
  complained: number;
}

export const SUSPENSION_SOURCES = ['AUTOMATIC', 'OPERATOR', 'BILLING'] as const;
export type SuspensionSource = (typeof SUSPENSION_SOURCES)[number];

/** Every time a project was disabled, and its lift (migration 0025; src/modules/security). */
export interface ProjectSuspensionsTable {
  id: Generated<string>;
  project_id: string;
  source: SuspensionSource;
  reason: string;
  metrics: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: Timestamp;
  lifted_at: Date | null;
  lifted_by: string | null;
  /** All-time totals when lifted: the reputation is judged from there on. */
  lifted_sent: number | null;
  lifted_bounced: number | null;
  lifted_complained: number | null;
}

export const WORKFLOW_STEP_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'] as const;
export type WorkflowStepType = (typeof WORKFLOW_STEP_TYPES)[number];
export const WORKFLOW_BRANCHES = ['yes', 'no', 'event', 'timeout'] as const;
export type WorkflowBranch = (typeof WORKFLOW_BRANCHES)[number];
export const EXECUTION_STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/** Executions that still hold the contact (never two per workflow and contact). */
export const ACTIVE_EXECUTION_STATUSES = ['RUNNING', 'WAITING'] as const satisfies readonly ExecutionStatus[];
export const STEP_EXECUTION_STATUSES = ['PENDING', 'WAITING', 'RUNNING', 'COMPLETED', 'SKIPPED', 'FAILED'] as const;
export type StepExecutionStatus = (typeof STEP_EXECUTION_STATUSES)[number];

type Json = Record<string, unknown>;
type JsonColumn = ColumnType<Json, string | undefined, string>;

/** A workflow definition (migration 0015; src/modules/workflows). */
export interface WorkflowsTable {
  project_id: string;
  id: Generated<string>;
  name: string;
  description: ColumnType<string, string | undefined, string>;
  trigger_type: ColumnType<'EVENT', 'EVENT' | undefined, 'EVENT'>;
  /** `{eventName}`. */
  trigger_config: ColumnType<Json, string, string>;
  /** Generated from trigger_config.eventName. */
  trigger_event: ColumnType<string | null, never, never>;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  allow_reentry: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WorkflowStepsTable {
  project_id: string;
  id: Generated<string>;
  workflow_id: string;
  type: WorkflowStepType;
  name: ColumnType<string, string | undefined, string>;
  config: JsonColumn;
  position_x: ColumnType<number, number | undefined, number>;
  position_y: ColumnType<number, number | undefined, number>;
  /** SEND_EMAIL's template (kept in step with config.templateId). */
  template_id: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WorkflowTransitionsTable {
  project_id: string;
  id: Generated<string>;
  workflow_id: string;
  from_step_id: string;
  to_step_id: string;
  branch: ColumnType<WorkflowBranch | null, WorkflowBranch | null | undefined, WorkflowBranch | null>;
  created_at: Timestamp;
}

/** Matching events waiting for their project's `workflow-events` job (migration 0018). */
export interface WorkflowEventQueueTable {
  project_id: string;
  event_id: string;
  created_at: Timestamp;
}

export interface WorkflowExecutionsTable {
  project_id: string;
  id: Generated<string>;
  workflow_id: string;
  contact_id: string;
  status: ColumnType<ExecutionStatus, ExecutionStatus | undefined, ExecutionStatus>;
  trigger_event_id: ColumnType<string | null, string | null | undefined, string | null>;
  event: JsonColumn;
  context: JsonColumn;
  current_step_id: ColumnType<string | null, string | null | undefined, string | null>;
  wait_event: ColumnType<string | null, string | null | undefined, string | null>;
  wait_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  exit_reason: ColumnType<string | null, string | null | undefined, string | null>;
  started_at: Timestamp;
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  updated_at: Timestamp;
}

export interface WorkflowStepExecutionsTable {
  project_id: string;
  id: Generated<string>;
  execution_id: string;
  workflow_id: string;
  step_id: string;
  status: ColumnType<StepExecutionStatus, StepExecutionStatus | undefined, StepExecutionStatus>;
  branch: ColumnType<WorkflowBranch | null, WorkflowBranch | null | undefined, WorkflowBranch | null>;
  output: ColumnType<Json | null, string | null | undefined, string | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  attempts: ColumnType<number, number | undefined, number>;
  due_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  started_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  completed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
}

export type WorkflowRow = Selectable<WorkflowsTable>;
export type WorkflowStepRow = Selectable<WorkflowStepsTable>;
export type WorkflowTransitionRow = Selectable<WorkflowTransitionsTable>;
export type WorkflowExecutionRow = Selectable<WorkflowExecutionsTable>;
export type WorkflowStepExecutionRow = Selectable<WorkflowStepExecutionsTable>;

/** Every (workflow, contact) that ever entered the workflow (migration 0019): the re-entry rule's record. */
export interface WorkflowEnrolmentsTable {
  project_id: string;
  workflow_id: string;
  contact_id: string;
  created_at: Timestamp;
}

/** A project's Stripe customer and subscription, and its monthly caps (migration 0026; billing/). */
export interface ProjectBillingTable {
  project_id: string;
  stripe_customer_id: string | null;
  stripe_subscription_id: string | null;
  /** Stripe's subscription status (active, trialing, past_due, canceled, …); null: never subscribed. */
  subscription_status: string | null;
  current_period_start: Date | null;
  current_period_end: Date | null;
  /** The Stripe `created` time of the last event applied: an older event never overwrites a newer one. */
  stripe_state_at: Date | null;
  /** Monthly caps per category; null: no cap of the project's own. */
  cap_transactional: ColumnType<number | null, number | null | undefined, number | null>;
  cap_campaign: ColumnType<number | null, number | null | undefined, number | null>;
  cap_workflow: ColumnType<number | null, number | null | undefined, number | null>;
  updated_at: Timestamp;
}

/** Emails queued per project, UTC month and category (migration 0026), kept in the queuing transaction. */
export interface BillingUsageTable {
  project_id: string;
  /** The first day of the UTC month. */
  period: ColumnType<Date, string, string>;
  transactional: ColumnType<number, number | undefined, number>;
  campaign: ColumnType<number, number | undefined, number>;
  workflow: ColumnType<number, number | undefined, number>;
}

/** Stripe webhook events already applied (migration 0026): a replay changes nothing. */
export interface BillingEventsTable {
  id: string;
  type: string;
  project_id: string | null;
  received_at: Timestamp;
}

export const UPLOAD_CONTENT_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;
export type UploadContentType = (typeof UPLOAD_CONTENT_TYPES)[number];

/** A stored image of a project (migration 0027; src/modules/uploads). */
export interface UploadsTable {
  project_id: string;
  id: string;
  /** `<id>.<jpg|png|gif|webp>`: the object's name in storage, served at /files/:key. */
  key: string;
  filename: string;
  content_type: UploadContentType;
  /** Bytes stored (after metadata was stripped): what the quota counts. */
  size: number;
  width: number;
  height: number;
  created_at: Timestamp;
}
export type UploadRow = Selectable<UploadsTable>;

/** Storage objects still to remove (migration 0027), drained by the `uploads-delete` job. */
export interface UploadDeletionsTable {
  project_id: string;
  key: string;
  not_before: Timestamp;
  attempts: ColumnType<number, number | undefined, number>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

/** A project's outgoing webhook endpoint (migration 0028; src/modules/webhook-endpoints). */
export interface WebhookEndpointsTable {
  project_id: string;
  id: Generated<string>;
  url: string;
  /** Event types it receives (src/modules/webhook-endpoints/event-types.ts). */
  events: string[];
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  /** The `whsec_…` secret sealed with a key derived from SECRET (src/lib/secret-box.ts). */
  secret: string;
  /** The first failed attempt since the last delivered one; null while healthy. */
  failing_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  disabled_reason: ColumnType<string | null, string | null | undefined, string | null>;
  disabled_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** No other deliverer runs for the endpoint before then. */
  lease_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;

export const WEBHOOK_DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

/** One event for one endpoint (migration 0028): the payload's data, its attempts and outcome. */
export interface WebhookDeliveriesTable {
  project_id: string;
  id: Generated<string>;
  endpoint_id: string;
  /** X-Webhook-Id and the payload's `id`. */
  event_id: string;
  event_type: string;
  event_at: Date;
  data: ColumnType<Record<string, unknown>, string, string>;
  status: ColumnType<WebhookDeliveryStatus, WebhookDeliveryStatus | undefined, WebhookDeliveryStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  last_attempt_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  status_code: ColumnType<number | null, number | null | undefined, number | null>;
  response_excerpt: ColumnType<string | null, string | null | undefined, string | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  duration_ms: ColumnType<number | null, number | null | undefined, number | null>;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
}
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

/**
 * Analytics rollups (migration 0029; src/modules/analytics, docs/analytics.md), kept by triggers.
 * Every row is one writer shard's part (`shard` = backend pid % 8): reads sum the shards.
 */
export interface AnalyticsEmailCountsTable {
  project_id: string;
  /** Start of a 15-minute UTC bucket. */
  bucket: Date;
  shard: number;
  sent: number;
  delivered: number;
  /** First human opens. */
  opened: number;
  /** First opens, machines included. */
  opened_any: number;
  clicked: number;
  bounced: number;
  complained: number;
  /** Of the emails sent in this bucket: how many have been delivered, opened (by a person)… by now. */
  sent_delivered: number;
  sent_opened: number;
  sent_clicked: number;
  sent_bounced: number;
  sent_complained: number;
}

/** All-time counts per campaign. */
export interface AnalyticsCampaignCountsTable {
  project_id: string;
  campaign_id: string;
  shard: number;
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

/** Tracked events (not the service's own names) per 15-minute UTC bucket and name. */
export interface AnalyticsEventCountsTable {
  project_id: string;
  bucket: Date;
  name: string;
  shard: number;
  count: number;
}

/** The same per UTC day. */
export interface AnalyticsEventDailyTable {
  project_id: string;
  day: ColumnType<string, string, string>;
  name: string;
  shard: number;
  count: number;
}
