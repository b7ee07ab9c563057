import type { Kysely } from 'kysely';
import { shippedMigrationNames } from '../../db/migrate.js';
import type { Database } from '../../db/schema.js';
import { readReadiness } from './system.repo.js';

/** The job workers this process runs, for the readiness check (set by src/server.ts). */
export interface LocalWorkers {
  /** The ids its runners record heartbeats under (src/jobs/liveness.ts). */
  readonly ids: readonly string[];
  /** A heartbeat older than this is a dead worker's (liveness.ts DEAD_AFTER_SECONDS). */
  readonly deadAfterSeconds: number;
}

/** How long the readiness and scrape reads may take, in all, before they count as failed. */
export const DATABASE_CHECK_TIMEOUT_MS = 2000;

/** Rejects when `work` has not settled within `ms` (its query goes on, bounded by its own timeouts). */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export type CheckResult = 'ok' | 'failed' | 'skipped';

export interface Readiness {
  ready: boolean;
  checks: { database: CheckResult; migrations: CheckResult; workers: CheckResult };
  /** Shipped migrations not applied to the database. */
  missingMigrations: string[];
  /** This process's workers without a recent heartbeat. */
  silentWorkers: string[];
  /** One line naming what failed (empty when ready); never the database's own error text (the route is public). */
  problem: string;
  /** The database's error, for the log. */
  cause?: unknown;
}

/**
 * GET /health/ready: the database answers, every migration this version ships is applied, and,
 * when this process runs job workers, each of them has a recent heartbeat. An API-only process
 * does not wait on workers: requests are accepted and queued whether or not a worker runs, and
 * taking every API out of the load balancer because workers stopped would turn a delivery delay
 * into an outage (the queue's age, GET /metrics, is what says workers are missing).
 * Applied migrations the code does not know (a newer version migrated the database) are fine:
 * migrations only expand the schema while older versions still serve.
 */
export async function checkReadiness(db: Kysely<Database>, workers: LocalWorkers | undefined): Promise<Readiness> {
  let row;
  try {
    row = await withDeadline(readReadiness(db, workers?.ids ?? [], workers?.deadAfterSeconds ?? 0), DATABASE_CHECK_TIMEOUT_MS, 'the check');
  } catch (err) {
    return {
      ready: false,
      checks: { database: 'failed', migrations: 'skipped', workers: 'skipped' },
      missingMigrations: [],
      silentWorkers: [],
      problem: 'the database is not answering',
      cause: err,
    };
  }
  const applied = new Set(row.applied);
  const missingMigrations = shippedMigrationNames().filter((name) => !applied.has(name));
  const beating = new Set(row.beating);
  const silentWorkers = workers ? workers.ids.filter((id) => !beating.has(id)) : [];
  const workersOk = workers === undefined || (workers.ids.length > 0 && silentWorkers.length === 0);
  const problems = [
    ...(missingMigrations.length > 0 ? [`migrations not applied: ${missingMigrations.join(', ')}`] : []),
    ...(workersOk
      ? []
      : workers?.ids.length === 0
        ? ['the job worker has not started']
        : [`no heartbeat in the last ${workers?.deadAfterSeconds} s from this process's job worker (${silentWorkers.join(', ')})`]),
  ];
  return {
    ready: problems.length === 0,
    checks: {
      database: 'ok',
      migrations: missingMigrations.length === 0 ? 'ok' : 'failed',
      workers: workers === undefined ? 'skipped' : workersOk ? 'ok' : 'failed',
    },
    missingMigrations,
    silentWorkers,
    problem: problems.join('; '),
  };
}
