import { type Kysely, sql } from 'kysely';
import { Counter, Gauge, Registry } from 'prom-client';
import type { Database } from '../../db/schema.js';
import { DEAD_AFTER_SECONDS } from '../../jobs/liveness.js';
import { METRIC_PREFIX, metricsRegistry } from '../../lib/metrics.js';
import { countPendingEmails } from '../emails/index.js';
import { sumEmailStats } from '../security/index.js';
import { DATABASE_CHECK_TIMEOUT_MS, withDeadline } from './health.service.js';
import { JobState, readQueueDepth, readWorkerHeartbeats } from './system.repo.js';

/**
 * The metrics read from the database at scrape time (the in-process ones are in lib/metrics.ts):
 * one short transaction whose statements PostgreSQL cancels after STATEMENT_TIMEOUT_MS, and the
 * whole read abandoned after DATABASE_CHECK_TIMEOUT_MS, so a slow database never hangs a scrape.
 * When the read fails, these series are left out (never stale values, never zeros) and
 * `mailplatform_scrape_database_success` is 0: they live in a registry of their own, answered
 * after the process's only when the read succeeded.
 */
const STATEMENT_TIMEOUT_MS = 1000;

const databaseRegistry = new Registry();
const registers = [databaseRegistry];
const queueJobs = new Gauge({
  name: `${METRIC_PREFIX}job_queue_jobs`,
  help: 'Jobs in the graphile-worker queue by task and state: runnable (due, waiting for a worker), scheduled (due later), running (locked), failed (out of attempts)',
  labelNames: ['task', 'state'] as const,
  registers,
});
const queueOldest = new Gauge({
  name: `${METRIC_PREFIX}job_queue_oldest_runnable_age_seconds`,
  help: 'How long the oldest runnable job of each task has been due (0: none waiting)',
  labelNames: ['task'] as const,
  registers,
});
const emailsPending = new Gauge({
  name: `${METRIC_PREFIX}emails_pending`,
  help: 'Emails accepted and waiting for delivery (status PENDING), every project',
  registers,
});
const emailsTotal = new Counter({
  name: `${METRIC_PREFIX}emails_total`,
  help: 'Emails that reached a milestone since the counters began (project_email_stats; the instance\'s own mail excluded), by status: sent, bounced (hard), complained',
  labelNames: ['status'] as const,
  registers,
});
const workersLive = new Gauge({
  name: `${METRIC_PREFIX}workers_live`,
  help: `Job worker runners with a heartbeat in the last ${DEAD_AFTER_SECONDS} s (every process; two per worker process: jobs and webhooks)`,
  registers,
});
const heartbeatAge = new Gauge({
  name: `${METRIC_PREFIX}worker_heartbeat_age_seconds`,
  help: 'Age of the newest worker heartbeat (absent when no worker ever beat)',
  registers,
});
const scrapeOk = new Gauge({
  name: `${METRIC_PREFIX}scrape_database_success`,
  help: '1 when this scrape read the database metrics (queue, emails, workers), 0 when the database failed or was too slow',
  registers: [metricsRegistry],
});
const scrapeSeconds = new Gauge({
  name: `${METRIC_PREFIX}scrape_database_duration_seconds`,
  help: 'How long this scrape\'s database reads took',
  registers: [metricsRegistry],
});

async function readDatabaseMetrics(db: Kysely<Database>) {
  return db.transaction().execute(async (trx) => {
    await sql`SET LOCAL statement_timeout = ${sql.lit(STATEMENT_TIMEOUT_MS)}`.execute(trx);
    const queue = await readQueueDepth(trx);
    const pending = await countPendingEmails(trx);
    const totals = await sumEmailStats(trx);
    const workers = await readWorkerHeartbeats(trx, DEAD_AFTER_SECONDS);
    return { queue, pending, totals, workers };
  });
}

/** Refreshes the database metrics, then answers the registry in Prometheus' text format. */
export async function scrapeMetrics(db: Kysely<Database>): Promise<string> {
  const started = performance.now();
  let ok = false;
  try {
    const read = await withDeadline(readDatabaseMetrics(db), DATABASE_CHECK_TIMEOUT_MS, 'the metrics read');
    // Replaced in one synchronous step: scrapes running at once never add up their counts.
    databaseRegistry.resetMetrics();
    for (const q of read.queue) {
      for (const state of Object.values(JobState)) queueJobs.set({ task: q.task, state }, q.counts[state]);
      queueOldest.set({ task: q.task }, q.oldestRunnableSeconds);
    }
    emailsPending.set(read.pending);
    emailsTotal.inc({ status: 'sent' }, read.totals.sent);
    emailsTotal.inc({ status: 'bounced' }, read.totals.bounced);
    emailsTotal.inc({ status: 'complained' }, read.totals.complained);
    workersLive.set(read.workers.live);
    if (read.workers.newestAgeSeconds !== null) heartbeatAge.set(read.workers.newestAgeSeconds);
    ok = true;
  } catch {
    // Left out of this answer (below); a scrape answered meanwhile may still show the last good read.
  }
  scrapeOk.set(ok ? 1 : 0);
  scrapeSeconds.set((performance.now() - started) / 1000);
  const own = await metricsRegistry.metrics();
  return ok ? `${own}${await databaseRegistry.metrics()}` : own;
}

/** The Content-Type of {@link scrapeMetrics}' answer. */
export const METRICS_CONTENT_TYPE = metricsRegistry.contentType;
