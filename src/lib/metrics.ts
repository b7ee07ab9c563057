import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics (GET /metrics, docs/operations.md "Metrics and health"). One
 * registry per process, shared by every app and worker it runs. Metrics recorded on a hot path are
 * pre-bound or observed once per batch; values read from the database are refreshed at scrape time
 * by src/modules/system. Labels are bounded: route patterns, task names, fixed kinds, never ids.
 */
export const metricsRegistry = new Registry();

/** Every metric's name starts with it (process and Node.js defaults included). */
export const METRIC_PREFIX = 'mailplatform_';

let defaultsOn = false;
/** Process, heap, GC and event-loop lag metrics (`mailplatform_nodejs_eventloop_lag_*`); once per process. */
export function collectProcessMetrics(): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register: metricsRegistry, prefix: METRIC_PREFIX });
}

/** Answered requests by route pattern (`unmatched`: no route), method and status; `_count` is the request count. */
export const httpRequestDuration = new Histogram({
  name: `${METRIC_PREFIX}http_request_duration_seconds`,
  help: 'HTTP requests answered, by route pattern (unmatched: no route), method and status code, and how long they took',
  labelNames: ['route', 'method', 'status_code'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [metricsRegistry],
});

/** Seconds from an email's acceptance (its row's created_at) to SENT, by source. */
export const emailDeliverySeconds = new Histogram({
  name: `${METRIC_PREFIX}email_delivery_seconds`,
  help: 'Time from an email being accepted (row created) to SENT (relay 250 or captured), by source (SEND: POST /v1/send, CAMPAIGN, WORKFLOW, TEST, SYSTEM)',
  labelNames: ['source'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
  registers: [metricsRegistry],
});

/** How delivery attempts ended (the kinds of DeliveryOutcome, `retried` for a transient failure, `error` for an unexpected one). */
export const emailDeliveries = new Counter({
  name: `${METRIC_PREFIX}email_deliveries_total`,
  help: 'Delivery attempts by outcome: sent, captured, unconfirmed, failed, skipped, throttled, retried (transient failure, job retried), error (unexpected)',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

/** The kinds of {@link smtpErrors}. */
export const SmtpErrorKind = {
  /** A 5xx reply (or an envelope/message the relay can never take): the email is FAILED. */
  permanent: 'permanent',
  /** A 4xx reply: retried. */
  temporary: 'temporary',
  /** No reply before the end of the message: connection refused, lost or timed out; retried. */
  connection: 'connection',
  /** The connection failed after the final dot, before the reply: the email is SENT, unconfirmed. */
  noReply: 'no_reply',
} as const;
export type SmtpErrorKind = (typeof SmtpErrorKind)[keyof typeof SmtpErrorKind];

export const smtpErrors = new Counter({
  name: `${METRIC_PREFIX}smtp_errors_total`,
  help: 'Failed SMTP transactions with the relay, by kind: permanent (5xx), temporary (4xx), connection (no reply, before the end of the message), no_reply (after it)',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

const groupCommitSizes = new Histogram({
  name: `${METRIC_PREFIX}group_commit_batch_size`,
  help: 'Items per committed group-commit batch, by batcher (track, send, delivery_load, delivery_sending, delivery_end_of_data, delivery_sent, inbound)',
  labelNames: ['batcher'] as const,
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512],
  registers: [metricsRegistry],
});

/** The batch-size observer of one named batcher (bound once: observing costs no label lookup). */
export function groupCommitObserver(batcher: string): (size: number) => void {
  const child = groupCommitSizes.labels(batcher);
  return (size) => child.observe(size);
}

/** What a pool reports (pg.Pool's counters). */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly options: { max?: number };
}

const pools = new Set<{ name: string; pool: PoolCounts }>();

/** Reports `pool` under `name` (its application_name) until the returned function is called. */
export function trackPool(name: string, pool: PoolCounts): () => void {
  const entry = { name, pool };
  pools.add(entry);
  return () => pools.delete(entry);
}

/** Per pool name, summed over that name's open pools. */
function poolGauge(suffix: string, help: string, read: (p: PoolCounts) => number): Gauge<'pool'> {
  return new Gauge({
    name: `${METRIC_PREFIX}db_pool_${suffix}`,
    help,
    labelNames: ['pool'] as const,
    registers: [metricsRegistry],
    collect() {
      this.reset();
      for (const { name, pool } of pools) this.inc({ pool: name }, read(pool));
    },
  });
}
poolGauge('connections', 'Open connections of the PostgreSQL pools, by pool (application_name)', (p) => p.totalCount);
poolGauge('idle_connections', 'Open connections not in use, by pool', (p) => p.idleCount);
poolGauge('waiting_clients', 'Queries waiting for a free connection, by pool', (p) => p.waitingCount);
poolGauge('max_connections', 'The most connections each pool opens, by pool', (p) => p.options.max ?? 10);
