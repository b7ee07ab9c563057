import { EventEmitter } from 'node:events';
import { Logger, run, type Runner, type WorkerEvents } from 'graphile-worker';
import type pg from 'pg';
import type { Logger as Pino } from 'pino';
import { connect, type Db } from './db/connection.js';
import { createTaskList, createWebhookTaskList, CRONTAB } from './jobs/index.js';
import type { JobDeps } from './jobs/deps.js';
import { forget, startLiveness } from './jobs/liveness.js';

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  pool: pg.Pool;
  deps: JobDeps;
  log: Pino;
  /**
   * Jobs run at once. Default 32: jobs mostly wait on SMTP and PostgreSQL, and one email's job
   * waits on both (docs/performance.md: 16 at once delivered ~885 queued emails/s, 32 ~1,240).
   */
  concurrency?: number;
  /** Run the recurring jobs of CRONTAB. Default true; tests sharing a database turn it off. */
  cron?: boolean;
  /** Outgoing webhook jobs (one endpoint each) run at once, in their own runner. Default 8. */
  webhookConcurrency?: number;
}

function workerLogger(log: Pino): Logger {
  return new Logger((scope) => (level, message, meta) => {
    // One line per completed job would dominate the log (and cost ~3% CPU at full send rate).
    const routine = level === 'info' && message.startsWith('Completed task');
    const fn = level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'debug' || routine ? 'debug' : 'info';
    log[fn]({ worker: scope, ...meta }, message);
  });
}

/**
 * The pool of delivery's shared statements (read, SENDING, end of data, SENT: one of each in
 * flight, modules/emails/delivery/batches.ts), on connections that plan each of them once
 * (`genericPlans`): planning was half of their PostgreSQL time (docs/performance.md "Delivery").
 */
function deliveryPool(pool: pg.Pool): Db | undefined {
  const url = pool.options.connectionString;
  return url === undefined ? undefined : connect(url, { max: 4, applicationName: 'mailplatform-delivery', genericPlans: true });
}

/** The runners of {@link startWorker}. */
export interface WorkerRunner extends Runner {
  /** The ids their heartbeats are recorded under (worker_heartbeats): the jobs runner's, then the webhooks runner's. */
  readonly workerIds: readonly string[];
}

/**
 * Runs the graphile-worker job runner in this process, with a heartbeat that lets the other
 * workers release its jobs should it die without stopping (src/jobs/liveness.ts). `stop()` waits
 * for running jobs.
 */
export async function startWorker(opts: WorkerOptions): Promise<WorkerRunner> {
  const logger = workerLogger(opts.log.child({ component: 'worker' }));
  // The pool id is what graphile-worker writes in locked_by: the heartbeat is recorded under it.
  const events: WorkerEvents = new EventEmitter();
  let poolId: string | undefined;
  events.on('pool:create', ({ workerPool }) => {
    poolId = workerPool.id;
  });
  const deliveryDb = deliveryPool(opts.pool);
  const runner = await run({
    pgPool: opts.pool,
    taskList: createTaskList({ ...opts.deps, deliveryDb: deliveryDb?.db }),
    crontab: opts.cron === false ? '' : CRONTAB,
    concurrency: opts.concurrency ?? 32,
    // Fetch and lock jobs 32 at a time, and complete them in batches gathered for up to 10 ms: far
    // fewer round trips at full send rate (10 ms: 6.5 jobs per completing statement instead of
    // 3.9, whose planning alone cost 148 µs; docs/performance.md "Delivery"). A job completed but
    // not yet recorded when a worker dies runs again, which every task tolerates (send-email will
    // not deliver twice: see docs/sending.md).
    preset: { worker: { localQueue: { size: 32 }, completeJobBatchDelay: 10 } },
    noHandleSignals: true,
    pollInterval: 1000,
    logger,
    events,
  });
  if (poolId === undefined) throw new Error('graphile-worker started no worker pool');
  const id = poolId;
  const liveness = startLiveness(opts.deps.db, id, opts.log.child({ component: 'worker', workerId: id }));
  // Outgoing webhooks in a runner of their own (its task list holds only them): calls that wait on
  // other people's servers never hold the slots above (docs/webhooks-outgoing.md "Isolation").
  const webhookEvents: WorkerEvents = new EventEmitter();
  let webhookPoolId: string | undefined;
  webhookEvents.on('pool:create', ({ workerPool }) => {
    webhookPoolId = workerPool.id;
  });
  const webhooks = await run({
    pgPool: opts.pool,
    taskList: createWebhookTaskList(opts.deps),
    crontab: '',
    concurrency: opts.webhookConcurrency ?? 8,
    // Every job insert notifies both runners. Without a local queue each notice woke up to 8 of
    // this runner's workers, each fetching (and finding no webhook job behind a backlog of
    // delivery jobs): ~6 job fetches per /v1/send batch, half the worker's job-fetch time in
    // PostgreSQL. With one, a notice makes one fetch (docs/performance.md "End to end, fourth pass").
    preset: { worker: { localQueue: { size: opts.webhookConcurrency ?? 8 } } },
    noHandleSignals: true,
    pollInterval: 1000,
    logger,
    events: webhookEvents,
  });
  if (webhookPoolId === undefined) throw new Error('graphile-worker started no webhook worker pool');
  const webhookId = webhookPoolId;
  const webhookLiveness = startLiveness(opts.deps.db, webhookId, opts.log.child({ component: 'worker', workerId: webhookId }));
  return {
    ...runner,
    workerIds: [id, webhookId],
    async stop(reason) {
      await Promise.all([liveness.stop(), webhookLiveness.stop()]);
      await Promise.all([runner.stop(reason), webhooks.stop(reason)]);
      await deliveryDb?.close();
      // Best effort: a heartbeat left behind (database gone) is removed by the next live worker.
      await Promise.all([forget(opts.deps.db, id), forget(opts.deps.db, webhookId)]).catch(() => undefined);
    },
  };
}
