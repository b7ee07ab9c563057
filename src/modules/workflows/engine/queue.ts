import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { JobPriority, Tasks } from '../../../jobs/queue.js';
import { errorMessage, isRetryable } from './errors.js';
import { EVENTS_CHUNK, enrolAndResume } from './events.js';
import { STEP_MAX_ATTEMPTS } from './jobs.js';

/**
 * Coalesced enrolment (migration 0018, docs/workflows.md "Engine"): the events trigger queues the
 * matching events in `workflow_event_queue` and enqueues ONE `workflow-events` job per project,
 * keyed {@link eventsJobKey}, due {@link EVENTS_WINDOW_MS} later in graphile-worker's
 * `preserve_run_at` mode, so every statement of that window shares the job.
 */
export const EVENTS_WINDOW_MS = 200;
/** A drain stops after this many chunks or {@link DRAIN_MAX_MS} and re-enqueues itself (other jobs get their turn). */
export const DRAIN_MAX_CHUNKS = 20;
export const DRAIN_MAX_MS = 10_000;
/** Queue rows older than this are re-enqueued by the sweep (cron, every minute). */
export const STRANDED_AFTER = '1 minute';

export const eventsJobKey = (projectId: string): string => `${Tasks.workflowEvents}:${projectId}`;

export interface DrainOptions {
  /** Events per transaction (default {@link EVENTS_CHUNK}); a job payload may carry a smaller one. */
  chunk?: number;
  maxChunks?: number;
  maxMs?: number;
  /** Tests: runs inside each chunk's transaction after its enrolment, before the commit (1-based chunk number, the chunk's events). */
  beforeCommit?: (trx: Transaction<Database>, chunk: number, eventIds: readonly string[]) => Promise<void>;
}

/** An event whose enrolment failed on its own with a permanent error: taken off the queue, not enrolled. */
export interface DroppedEvent {
  eventId: string;
  error: string;
}

export interface DrainResult {
  enrolled: number;
  resumed: number;
  /** Chunks committed. */
  chunks: number;
  /** Stopped at a bound with rows left: the job was enqueued again. */
  requeued: boolean;
  /** Events isolated as the cause of a permanent failure (the job logs them). */
  dropped: DroppedEvent[];
}

/**
 * The `workflow-events` job `{projectId}`: takes the project's queued events in chunks, oldest
 * first. Per chunk ONE transaction: `DELETE … FOR UPDATE SKIP LOCKED … RETURNING` the chunk's
 * rows, enrol and resume for them (events.ts `enrolAndResume`), commit. The rows leave the queue
 * exactly when their enrolment commits: a failure or a crash leaves them for the next run (the
 * job's retry, or the job the next event or the sweep enqueues), and a re-run repeats nothing
 * (one execution per (workflow, source event), a resumed wait is no longer WAITING). Concurrent
 * drains of one project (a new keyed job while this one runs) take disjoint rows (SKIP LOCKED),
 * and enrolment itself is serialised per project (start.ts `lockEnrolment`). A transient error
 * (deadlock, lost connection) fails the job for graphile-worker to retry; a permanent one halves
 * the chunk until the event causing it is alone, and that event is dropped from the queue (in
 * `dropped`, logged by the job): it is recorded, but enrols no one and resumes nothing.
 */
export async function drainEventQueue(db: Kysely<Database>, projectId: string, opts: DrainOptions = {}): Promise<DrainResult> {
  const chunk = opts.chunk ?? EVENTS_CHUNK;
  const maxChunks = opts.maxChunks ?? DRAIN_MAX_CHUNKS;
  const maxMs = opts.maxMs ?? DRAIN_MAX_MS;
  const started = Date.now();
  const result: DrainResult = { enrolled: 0, resumed: 0, chunks: 0, requeued: false, dropped: [] };
  // A permanent failure (not a deadlock or a lost connection) halves the chunk until the one
  // event that causes it is alone, which is then dropped: one bad event never blocks the queue.
  let size = chunk;
  for (;;) {
    let attempted: string[] = [];
    let taken: number;
    try {
      taken = await db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ event_id: string }>`
          DELETE FROM workflow_event_queue q
          WHERE q.project_id = ${projectId}::uuid AND q.event_id IN (
            SELECT event_id FROM workflow_event_queue
            WHERE project_id = ${projectId}::uuid
            ORDER BY created_at, event_id
            LIMIT ${size}::int
            FOR UPDATE SKIP LOCKED)
          RETURNING q.event_id`.execute(trx);
        if (rows.length === 0) return 0;
        attempted = rows.map((row) => row.event_id);
        const r = await enrolAndResume(trx, projectId, attempted);
        await opts.beforeCommit?.(trx, result.chunks + 1, attempted);
        result.enrolled += r.enrolled;
        result.resumed += r.resumed;
        return rows.length;
      });
    } catch (err) {
      if (isRetryable(err) || attempted.length === 0) throw err;
      if (attempted.length > 1) {
        size = Math.ceil(attempted.length / 2);
        continue;
      }
      const eventId = attempted[0] as string;
      await sql`DELETE FROM workflow_event_queue WHERE project_id = ${projectId}::uuid AND event_id = ${eventId}::uuid`.execute(db);
      result.dropped.push({ eventId, error: errorMessage(err) });
      size = chunk;
      continue;
    }
    if (taken === 0) return result;
    result.chunks++;
    if (taken < size) return result;
    if (result.chunks >= maxChunks || Date.now() - started >= maxMs) {
      await enqueueEventsJob(db, projectId, opts.chunk);
      result.requeued = true;
      return result;
    }
  }
}

/**
 * The project's keyed `workflow-events` job, due now (`replace`: a waiting one is moved to now).
 * Called from the running job, graphile-worker's add_job clears the key of that job (locked) and
 * inserts a new one: see docs/workflows.md "Engine".
 */
async function enqueueEventsJob(db: Kysely<Database>, projectId: string, chunk: number | undefined): Promise<void> {
  const payload = chunk === undefined ? { projectId } : { projectId, chunk };
  await sql`
    SELECT graphile_worker.add_job(${Tasks.workflowEvents}::text, ${JSON.stringify(payload)}::json,
      job_key => ${eventsJobKey(projectId)}::text, priority => ${JobPriority.workflowSteps}::int, max_attempts => ${STEP_MAX_ATTEMPTS}::int)`.execute(db);
}

/**
 * The sweep (cron, every minute): one statement enqueuing the keyed job of every project with
 * queue rows older than {@link STRANDED_AFTER} (a job lost in a race, or failing: see the docs).
 * `preserve_run_at`: a job already waiting keeps its time. Returns the projects.
 */
export async function sweepEventQueue(db: Kysely<Database>): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM graphile_worker.add_jobs(ARRAY(
      SELECT ROW(${Tasks.workflowEvents}::text, json_build_object('projectId', project_id), NULL::text, NULL::timestamptz,
                 ${STEP_MAX_ATTEMPTS}::int, ${`${Tasks.workflowEvents}:`}::text || project_id::text,
                 ${JobPriority.workflowSteps}::int, NULL::text[])::graphile_worker.job_spec
      FROM (SELECT DISTINCT project_id FROM workflow_event_queue WHERE created_at < now() - ${STRANDED_AFTER}::interval) s
    ), true)`.execute(db);
  return rows[0]?.n ?? 0;
}
