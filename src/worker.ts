import { Logger, run, type Runner } from 'graphile-worker';
import type pg from 'pg';
import type { Logger as Pino } from 'pino';
import { createTaskList, CRONTAB } from './jobs/index.js';
import type { JobDeps } from './jobs/deps.js';

/** Options of {@link startWorker}. */
export interface WorkerOptions {
  pool: pg.Pool;
  deps: JobDeps;
  log: Pino;
  /** Jobs run at once. Default 8. */
  concurrency?: number;
  /** Run the recurring jobs of CRONTAB. Default true; tests sharing a database turn it off. */
  cron?: boolean;
}

function workerLogger(log: Pino): Logger {
  return new Logger((scope) => (level, message, meta) => {
    const fn = level === 'error' ? 'error' : level === 'warning' ? 'warn' : level === 'debug' ? 'debug' : 'info';
    log[fn]({ worker: scope, ...meta }, message);
  });
}

/** Runs the graphile-worker job runner in this process; `stop()` waits for running jobs. */
export async function startWorker(opts: WorkerOptions): Promise<Runner> {
  return run({
    pgPool: opts.pool,
    taskList: createTaskList(opts.deps),
    crontab: opts.cron === false ? '' : CRONTAB,
    concurrency: opts.concurrency ?? 8,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(opts.log.child({ component: 'worker' })),
  });
}
