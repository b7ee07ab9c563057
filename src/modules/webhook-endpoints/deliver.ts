import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { SecretBox } from '../../lib/secret-box.js';
import { type LookupAll, systemLookup } from '../../lib/ssrf.js';
import { queueSystemEmail } from '../emails/index.js';
import { nextAttemptAt } from './backoff.js';
import {
  acquireLease,
  type AttemptRecord,
  claimDue,
  type ClaimedDelivery,
  deferDeliveries,
  type Lease,
  markAutoDisabled,
  nextDueAt,
  recordAttempts,
  releaseLease,
  renewLease,
  scheduleRetryJob,
  updateHealth,
  wakeEndpoint,
} from './deliveries.repo.js';
import { type CallOutcome, postSigned, resolveEndpoint } from './http-call.js';
import { endpointDisabledNotice } from './notice.js';
import { openSecret, payloadBody } from './payload.js';
import { abandonPendingDeliveries, findProjectManagers } from './webhook-endpoints.repo.js';

/** A deliverer holds its endpoint this long, renewed before each batch (a batch lasts at most ~60 s). */
export const LEASE_SECONDS = 90;
/** Deliveries claimed at once. */
export const BATCH_SIZE = 50;
/** Calls in flight to one endpoint at most (the per-endpoint bound: one deliverer per endpoint). */
export const ENDPOINT_CONCURRENCY = 10;
/** A run starts no new batch after this long, so endpoints share the webhook runner's slots. */
export const RUN_BUDGET_MS = 20_000;
/** After a batch whose first ENDPOINT_CONCURRENCY calls all failed, the endpoint rests this long. */
export const PAUSE_MS = 30_000;
/** No success for this long (with attempts failing): the endpoint is disabled and its managers emailed. */
export const DISABLE_AFTER_MS = 24 * 60 * 60 * 1000;

export interface DelivererDeps {
  db: Kysely<Database>;
  /** Opens the endpoints' sealed secrets (endpointSecretBox). */
  box: SecretBox;
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** Default: the system resolver. */
  lookup?: LookupAll;
  /** Per call; default CALL_TIMEOUT_MS (10 s). */
  callTimeoutMs?: number;
  /** Unix ms; default Date.now. */
  now?: () => number;
  /** In [0, 1), for the retry jitter; default Math.random. */
  random?: () => number;
}

export interface RunSummary {
  /** False when another deliverer held the endpoint, or it is disabled or gone. */
  ran: boolean;
  delivered: number;
  failed: number;
  /** This run disabled the endpoint (a day of failures). */
  disabled: boolean;
}

interface BatchResult {
  records: AttemptRecord[];
  /** Claimed but not tried (the circuit opened, or the worker is stopping). */
  skipped: string[];
  circuitOpen: boolean;
}

/** The calls of one batch, at most ENDPOINT_CONCURRENCY at once; a first wave that all fails stops the rest. */
async function callBatch(deps: DelivererDeps, lease: Lease, rows: readonly ClaimedDelivery[], signal?: AbortSignal): Promise<BatchResult> {
  const now = deps.now ?? Date.now;
  const failAll = (error: string): BatchResult => {
    const at = new Date(now());
    return { records: rows.map((r) => failure(deps, r, { ok: false, statusCode: null, excerpt: null, error, durationMs: 0, interrupted: false }, at)), skipped: [], circuitOpen: true };
  };
  const secret = openSecret(deps.box, lease.sealedSecret);
  if (secret instanceof Error) return failAll(secret.message);
  const url = new URL(lease.url);
  let address;
  try {
    address = await resolveEndpoint(url, { lookup: deps.lookup ?? systemLookup, allowPrivate: deps.allowPrivate, timeoutMs: deps.callTimeoutMs });
  } catch (err) {
    return failAll(err instanceof Error ? err.message : String(err));
  }
  const records: AttemptRecord[] = [];
  const skipped: string[] = [];
  const call = async (row: ClaimedDelivery): Promise<void> => {
    if (signal?.aborted) {
      skipped.push(row.id);
      return;
    }
    const at = new Date(now());
    const outcome = await postSigned({ url, address, body: payloadBody(row), secret, webhookId: row.event_id, eventType: row.event_type, signal, timeoutMs: deps.callTimeoutMs, now });
    if (outcome.interrupted) skipped.push(row.id);
    else if (outcome.ok) records.push({ id: row.id, ok: true, statusCode: outcome.statusCode, excerpt: outcome.excerpt, error: null, durationMs: outcome.durationMs, at, next: null });
    else records.push(failure(deps, row, outcome, at));
  };
  // A first wave of ENDPOINT_CONCURRENCY calls; when none of them succeeds the endpoint is down,
  // and the rest of the batch is not tried now (the caller rests the endpoint).
  const wave = rows.slice(0, ENDPOINT_CONCURRENCY);
  await Promise.all(wave.map(call));
  const rest = rows.slice(wave.length);
  const circuitOpen = wave.length > 0 && records.length === wave.length && records.every((r) => !r.ok);
  if (circuitOpen) return { records, skipped: [...skipped, ...rest.map((r) => r.id)], circuitOpen };
  const queue = rest.values();
  const worker = async () => {
    for (const row of queue) await call(row);
  };
  await Promise.all(Array.from({ length: Math.min(ENDPOINT_CONCURRENCY, rest.length) }, worker));
  return { records, skipped, circuitOpen: false };
}

function failure(deps: DelivererDeps, row: ClaimedDelivery, o: CallOutcome, at: Date): AttemptRecord {
  const next = nextAttemptAt({ createdAt: row.created_at, failedAttempts: row.attempts + 1, now: (deps.now ?? Date.now)(), random: deps.random });
  return { id: row.id, ok: false, statusCode: o.statusCode, excerpt: o.excerpt, error: o.error, durationMs: o.durationMs, at, next };
}

/**
 * Records a batch and the endpoint's health in one transaction; disables the endpoint when no
 * attempt has succeeded for DISABLE_AFTER_MS (its waiting deliveries given up, its OWNERs and
 * ADMINs emailed). True when it disabled it.
 */
async function recordBatch(deps: DelivererDeps, trx: Transaction<Database>, ids: { projectId: string; endpointId: string }, records: readonly AttemptRecord[]): Promise<boolean> {
  if (records.length === 0) return false;
  await recordAttempts(trx, ids.projectId, records);
  const failures = records.filter((r) => !r.ok);
  const anyOk = failures.length < records.length;
  const firstFailure = failures.reduce<Date | null>((min, r) => (min === null || r.at < min ? r.at : min), null);
  const health = await updateHealth(trx, ids.projectId, ids.endpointId, { anyOk, firstFailure });
  if (!health?.enabled || anyOk || !health.failingSince) return false;
  const now = (deps.now ?? Date.now)();
  if (now - health.failingSince.getTime() < DISABLE_AFTER_MS) return false;
  const lastError = failures.at(-1)?.error ?? 'unknown error';
  const reason = `No delivery succeeded for 24 hours (failing since ${health.failingSince.toISOString()}); last error: ${lastError}`.slice(0, 1000);
  if (!(await markAutoDisabled(trx, ids.projectId, ids.endpointId, reason))) return false;
  await abandonPendingDeliveries(trx, ids.projectId, ids.endpointId, 'the endpoint was disabled after 24 hours of failures');
  const managers = await findProjectManagers(trx, ids.projectId);
  if (managers) {
    const notice = endpointDisabledNotice({ projectId: ids.projectId, projectName: managers.name, endpointId: ids.endpointId, url: health.url, reason });
    for (const to of managers.emails) {
      await queueSystemEmail(trx, { to, subject: notice.subject, text: notice.text, kind: 'webhook-endpoint-disabled', projectId: ids.projectId });
    }
  }
  return true;
}

/**
 * One run for one endpoint (the `webhook-deliver` job; docs/webhooks-outgoing.md "Delivery"):
 * takes the endpoint's lease, then claims due deliveries in batches of BATCH_SIZE and calls them
 * (ENDPOINT_CONCURRENCY at once, 10 s each), recording each outcome: 2xx delivered, anything else
 * retried on the backoff schedule for 24 hours, then given up. A batch whose first calls all fail
 * rests the endpoint for PAUSE_MS. After RUN_BUDGET_MS it stops starting batches. Then it releases
 * the lease and queues the next run: at once when deliveries are due, else at the earliest retry.
 * A call made but not recorded (crash) is made again after CLAIM_GUARD_SECONDS: at least once.
 */
export async function deliverEndpoint(
  deps: DelivererDeps,
  input: { projectId: string; endpointId: string; signal?: AbortSignal },
): Promise<RunSummary> {
  const { db } = deps;
  const { projectId, endpointId, signal } = input;
  const now = deps.now ?? Date.now;
  const summary: RunSummary = { ran: false, delivered: 0, failed: 0, disabled: false };
  let lease = await acquireLease(db, projectId, endpointId, LEASE_SECONDS);
  if (!lease) return summary;
  summary.ran = true;
  const started = now();
  let pauseUntil: Date | null = null;
  try {
    for (let first = true; !signal?.aborted; first = false) {
      if (!first) {
        if (now() - started >= RUN_BUDGET_MS) break;
        const renewed = await renewLease(db, projectId, endpointId, lease.leaseUntil, LEASE_SECONDS);
        if (!renewed) break;
        lease = renewed;
      }
      const rows = await claimDue(db, projectId, endpointId, BATCH_SIZE);
      if (rows.length === 0) break;
      const batch = await callBatch(deps, lease, rows, signal);
      if (batch.circuitOpen && !signal?.aborted) pauseUntil = new Date(now() + PAUSE_MS);
      await deferDeliveries(db, projectId, batch.skipped, pauseUntil ?? new Date(now()));
      summary.disabled = await db.transaction().execute((trx) => recordBatch(deps, trx, { projectId, endpointId }, batch.records));
      for (const r of batch.records) summary[r.ok ? 'delivered' : 'failed']++;
      if (summary.disabled || pauseUntil) break;
    }
  } finally {
    await releaseLease(db, projectId, endpointId, lease.leaseUntil, pauseUntil);
  }
  const due = await nextDueAt(db, projectId, endpointId);
  if (due) {
    const at = pauseUntil && pauseUntil > due ? pauseUntil : due;
    if (at.getTime() <= now()) await wakeEndpoint(db, projectId, endpointId);
    else await scheduleRetryJob(db, projectId, endpointId, at);
  }
  return summary;
}
