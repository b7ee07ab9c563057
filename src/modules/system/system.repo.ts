import { type Kysely, sql, type Transaction } from 'kysely';
import { MIGRATION_TABLE } from '../../db/migrate.js';
import type { Database } from '../../db/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** What GET /health/ready reads, in one statement. */
export interface ReadinessRow {
  /** The names of our applied migrations (kysely's table). */
  applied: string[];
  /** Those of `workerIds` with a heartbeat in the last `withinSeconds` (worker_heartbeats, src/jobs/liveness.ts). */
  beating: string[];
}

export async function readReadiness(db: Db, workerIds: readonly string[], withinSeconds: number): Promise<ReadinessRow> {
  const { rows } = await sql<{ applied: string[] | null; beating: string[] | null }>`
    SELECT (SELECT array_agg(name) FROM ${sql.table(MIGRATION_TABLE)}) AS applied,
           (SELECT array_agg(worker_id) FROM worker_heartbeats
            WHERE worker_id = any(${workerIds}::text[]) AND beat_at > now() - make_interval(secs => ${withinSeconds})) AS beating`.execute(db);
  return { applied: rows[0]?.applied ?? [], beating: rows[0]?.beating ?? [] };
}

/** The states of {@link QueueDepth}: jobs by what they wait for. */
export const JobState = {
  /** Due now and not locked: waiting for a free worker slot. */
  runnable: 'runnable',
  /** Due later (run_at in the future: scheduled, or a retry's backoff). */
  scheduled: 'scheduled',
  /** Locked by a worker: running. */
  running: 'running',
  /** Out of attempts: kept by graphile-worker, never run again. */
  failed: 'failed',
} as const;
export type JobState = (typeof JobState)[keyof typeof JobState];

/** One task's jobs in graphile-worker's queue. */
export interface QueueDepth {
  task: string;
  counts: Record<JobState, number>;
  /** Seconds the oldest runnable job has been due; 0 when none is. */
  oldestRunnableSeconds: number;
}

/**
 * graphile-worker's queue by task, in one statement over its job table (a scan of the jobs that
 * exist: the queue, not the history, since completed jobs are deleted). Tasks without jobs are absent.
 */
export async function readQueueDepth(db: Db): Promise<QueueDepth[]> {
  const { rows } = await sql<{ task: string; runnable: number; scheduled: number; running: number; failed: number; oldest: number | null }>`
    SELECT t.identifier AS task,
           count(*) FILTER (WHERE j.is_available AND j.run_at <= now())::bigint AS runnable,
           count(*) FILTER (WHERE j.is_available AND j.run_at > now())::bigint AS scheduled,
           count(*) FILTER (WHERE j.locked_at IS NOT NULL)::bigint AS running,
           count(*) FILTER (WHERE j.locked_at IS NULL AND j.attempts >= j.max_attempts)::bigint AS failed,
           extract(epoch FROM now() - min(j.run_at) FILTER (WHERE j.is_available AND j.run_at <= now()))::float8 AS oldest
    FROM graphile_worker._private_jobs j
    JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    GROUP BY t.identifier
    ORDER BY t.identifier`.execute(db);
  return rows.map((r) => ({
    task: r.task,
    counts: { runnable: r.runnable, scheduled: r.scheduled, running: r.running, failed: r.failed },
    oldestRunnableSeconds: r.oldest ?? 0,
  }));
}

/** Workers with a heartbeat in the last `withinSeconds` (any process), and the age of the newest heartbeat (null: none). */
export async function readWorkerHeartbeats(db: Db, withinSeconds: number): Promise<{ live: number; newestAgeSeconds: number | null }> {
  const { rows } = await sql<{ live: number; newest: number | null }>`
    SELECT count(*) FILTER (WHERE beat_at > now() - make_interval(secs => ${withinSeconds}))::bigint AS live,
           extract(epoch FROM now() - max(beat_at))::float8 AS newest
    FROM worker_heartbeats`.execute(db);
  return { live: rows[0]?.live ?? 0, newestAgeSeconds: rows[0]?.newest ?? null };
}
