import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, JobRow, JobRowError, JobStatus } from '../../db/schema.js';
import type { TaskName } from '../../jobs/queue.js';
import { isUuid } from '../../lib/uuid.js';

type Db = Kysely<Database> | Transaction<Database>;

/** `jobs.kind` of the contact jobs. */
export const JobKind = {
  bulkSubscribe: 'bulk-subscribe',
  bulkUnsubscribe: 'bulk-unsubscribe',
  bulkDelete: 'bulk-delete',
  fieldDelete: 'field-delete',
  import: 'import',
} as const;
export type JobKind = (typeof JobKind)[keyof typeof JobKind];

/** At most this many `{row, message}` entries are kept per job; `failed` still counts them all. */
export const MAX_STORED_ERRORS = 1000;

/** A job as the status endpoints answer it (DESIGN §10). */
export interface JobStatusView {
  id: string;
  kind: string;
  status: JobStatus;
  total: number;
  processed: number;
  failed: number;
  errors: JobRowError[];
  createdAt: string;
  updatedAt: string;
}

export function rowToJobStatus(row: JobRow): JobStatusView {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    total: row.total,
    processed: row.processed,
    failed: row.failed,
    errors: row.errors,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Options of {@link createQueuedJob}. */
export interface QueuedJob {
  projectId: string;
  kind: JobKind;
  task: TaskName;
  /** graphile-worker priority (see JobPriority: smaller runs first). */
  priority: number;
  /** Runs before the job is marked FAILED. Default 5. */
  maxAttempts?: number;
  total?: number;
  payload?: Record<string, unknown>;
}

/** Inserts the job row (PENDING) and returns its id; enqueue with {@link enqueueJob} in the same transaction. */
export async function insertJob(trx: Transaction<Database>, job: Omit<QueuedJob, 'task' | 'priority' | 'maxAttempts'>): Promise<string> {
  const row = await trx
    .insertInto('jobs')
    .values({ project_id: job.projectId, kind: job.kind, total: job.total ?? 0, payload: JSON.stringify(job.payload ?? {}) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/**
 * Enqueues the task of a job row in the caller's transaction: it runs only if the row commits.
 * The job key is the row id, so enqueuing twice cannot run the work twice.
 */
export async function enqueueJob(
  trx: Transaction<Database>,
  job: { jobId: string; task: TaskName; priority: number; maxAttempts?: number },
): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(
      ${job.task},
      payload => json_build_object('jobId', ${job.jobId}::text),
      max_attempts => ${job.maxAttempts ?? 5}::int,
      job_key => ${job.jobId}::text,
      priority => ${job.priority}::int
    )`.execute(trx);
}

/** Job row and its graphile-worker job, in one transaction of the caller. */
export async function createQueuedJob(trx: Transaction<Database>, job: QueuedJob): Promise<string> {
  const jobId = await insertJob(trx, job);
  await enqueueJob(trx, { jobId, task: job.task, priority: job.priority, maxAttempts: job.maxAttempts });
  return jobId;
}

/** A job of the project, of one of `kinds`; undefined for a malformed id or another project's job. */
export async function findJobOfProject(
  db: Db,
  input: { projectId: string; jobId: string; kinds: readonly JobKind[] },
): Promise<JobRow | undefined> {
  if (!isUuid(input.jobId)) return undefined;
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', input.jobId)
    .where('project_id', '=', input.projectId)
    .where('kind', 'in', input.kinds)
    .executeTakeFirst();
}

/**
 * Marks a job PROCESSING and returns it, or undefined when it is missing or already finished
 * (a re-run of a finished job must do nothing).
 */
export async function claimJob(db: Db, jobId: string): Promise<JobRow | undefined> {
  return db
    .updateTable('jobs')
    .set({ status: 'PROCESSING', updated_at: sql`now()` })
    .where('id', '=', jobId)
    .where('status', 'in', ['PENDING', 'PROCESSING'])
    .returningAll()
    .executeTakeFirst();
}

/** Locks an unfinished job row for the rest of the transaction; undefined when it is finished. */
export async function lockUnfinishedJob(trx: Transaction<Database>, jobId: string): Promise<JobRow | undefined> {
  return trx
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', jobId)
    .where('status', 'in', ['PENDING', 'PROCESSING'])
    .forUpdate()
    .executeTakeFirst();
}

/** Progress of one committed batch: counts are added, errors appended. */
export interface JobProgress {
  processed?: number;
  failed?: number;
  /** Appended; the caller keeps the total under MAX_STORED_ERRORS. */
  errors?: readonly JobRowError[];
  /** Keys merged into the payload (a resume cursor). */
  payload?: Record<string, unknown>;
  /** Replaces the total. */
  total?: number;
  /** Set with the progress (COMPLETED or FAILED ends the job). */
  status?: JobStatus;
}

export async function addJobProgress(db: Db, jobId: string, p: JobProgress): Promise<void> {
  await db
    .updateTable('jobs')
    .set({
      processed: sql`processed + ${p.processed ?? 0}::int`,
      failed: sql`failed + ${p.failed ?? 0}::int`,
      errors: sql`errors || ${JSON.stringify(p.errors ?? [])}::jsonb`,
      payload: sql`payload || ${JSON.stringify(p.payload ?? {})}::jsonb`,
      ...(p.total !== undefined && { total: p.total }),
      ...(p.status !== undefined && { status: p.status }),
      updated_at: sql`now()`,
    })
    .where('id', '=', jobId)
    .execute();
}

/**
 * Ends an unfinished job as FAILED with one error entry (row 0: the job as a whole) and drops
 * its stored upload, if any. This entry may be the 1,001st.
 */
export async function failJob(db: Db, jobId: string, message: string): Promise<void> {
  await sql`
    WITH chunks AS (DELETE FROM import_chunks WHERE job_id = ${jobId})
    UPDATE jobs
    SET status = 'FAILED', errors = errors || ${JSON.stringify([{ row: 0, message }])}::jsonb, updated_at = now()
    WHERE id = ${jobId} AND status IN ('PENDING', 'PROCESSING')`.execute(db);
}
