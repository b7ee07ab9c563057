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

export interface ProjectsTable {
  id: Generated<string>;
  name: string;
  public_key: string;
  secret_key: string;
  disabled: Generated<boolean>;
  tracking: ColumnType<TrackingMode, TrackingMode | undefined, TrackingMode>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MembershipsTable {
  project_id: string;
  user_id: string;
  role: ProjectRole;
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
  projects: ProjectsTable;
  memberships: MembershipsTable;
  idempotency_keys: IdempotencyKeysTable;
  contacts: ContactsTable;
  events: EventsTable;
  jobs: JobsTable;
  import_chunks: ImportChunksTable;
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
  seq: number;
  data: Buffer;
}
