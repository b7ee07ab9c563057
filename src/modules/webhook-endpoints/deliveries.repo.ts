import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, WebhookDeliveryRow, WebhookDeliveryStatus } from '../../db/schema.js';
import { Tasks } from '../../jobs/queue.js';

type Db = Kysely<Database> | Transaction<Database>;

/** How long a claimed row stays away from other claims: a deliverer that died leaves it due again then. */
export const CLAIM_GUARD_SECONDS = 120;

/** What a deliverer needs of the endpoint it holds. `leaseUntil` is its token (millisecond precision). */
export interface Lease {
  url: string;
  sealedSecret: string;
  leaseUntil: Date;
}

/**
 * Takes the endpoint until now + `seconds`: only when it is enabled and no other deliverer holds
 * it (one deliverer per endpoint at a time, the bound on its concurrent calls).
 */
export async function acquireLease(db: Db, projectId: string, endpointId: string, seconds: number): Promise<Lease | undefined> {
  const { rows } = await sql<{ url: string; secret: string; lease_until: Date }>`
    UPDATE webhook_endpoints SET lease_until = date_trunc('milliseconds', now() + make_interval(secs => ${seconds}))
    WHERE project_id = ${projectId} AND id = ${endpointId} AND enabled AND (lease_until IS NULL OR lease_until <= now())
    RETURNING url, secret, lease_until`.execute(db);
  const r = rows[0];
  return r && { url: r.url, sealedSecret: r.secret, leaseUntil: r.lease_until };
}

/**
 * Extends a lease still held (before each batch), with the endpoint's current URL and secret
 * (a PATCH or rotation applies from the next batch). Undefined once disabled, deleted, or taken over.
 */
export async function renewLease(db: Db, projectId: string, endpointId: string, held: Date, seconds: number): Promise<Lease | undefined> {
  const { rows } = await sql<{ url: string; secret: string; lease_until: Date }>`
    UPDATE webhook_endpoints SET lease_until = date_trunc('milliseconds', now() + make_interval(secs => ${seconds}))
    WHERE project_id = ${projectId} AND id = ${endpointId} AND enabled AND lease_until = ${held}
    RETURNING url, secret, lease_until`.execute(db);
  const r = rows[0];
  return r && { url: r.url, sealedSecret: r.secret, leaseUntil: r.lease_until };
}

/** Ends a lease (`until` null), or keeps others away until `until` (a pause after a batch that all failed). */
export async function releaseLease(db: Db, projectId: string, endpointId: string, held: Date, until: Date | null): Promise<void> {
  await sql`UPDATE webhook_endpoints SET lease_until = ${until} WHERE project_id = ${projectId} AND id = ${endpointId} AND lease_until = ${held}`.execute(db);
}

export type ClaimedDelivery = Pick<WebhookDeliveryRow, 'id' | 'event_id' | 'event_type' | 'event_at' | 'data' | 'attempts' | 'created_at'>;

/** Up to `limit` due deliveries of the endpoint, earliest first, each pushed CLAIM_GUARD_SECONDS ahead. */
export async function claimDue(db: Db, projectId: string, endpointId: string, limit: number): Promise<ClaimedDelivery[]> {
  const { rows } = await sql<ClaimedDelivery>`
    UPDATE webhook_deliveries d SET next_attempt_at = now() + make_interval(secs => ${CLAIM_GUARD_SECONDS})
    FROM (
      SELECT project_id, id FROM webhook_deliveries
      WHERE project_id = ${projectId} AND endpoint_id = ${endpointId} AND status = 'PENDING' AND next_attempt_at <= now()
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ) c
    WHERE d.project_id = c.project_id AND d.id = c.id
    RETURNING d.id, d.event_id, d.event_type, d.event_at, d.data, d.attempts, d.created_at`.execute(db);
  return rows;
}

/** One attempt's outcome; `next` null with `ok` false gives the delivery up. */
export interface AttemptRecord {
  id: string;
  ok: boolean;
  statusCode: number | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
  at: Date;
  next: Date | null;
}

/**
 * Records attempts (one statement). A failure is recorded only on a row still PENDING (an
 * endpoint disabled meanwhile has given it up); a success always (it did arrive).
 */
export async function recordAttempts(trx: Transaction<Database>, projectId: string, records: readonly AttemptRecord[]): Promise<void> {
  if (records.length === 0) return;
  const col = <K extends keyof AttemptRecord>(k: K) => records.map((r) => r[k]);
  await sql`
    UPDATE webhook_deliveries d SET
      attempts = d.attempts + 1,
      last_attempt_at = r.at,
      status = CASE WHEN r.ok THEN 'DELIVERED' WHEN r.next IS NULL THEN 'FAILED' ELSE 'PENDING' END,
      next_attempt_at = CASE WHEN r.ok THEN NULL ELSE r.next END,
      status_code = r.code, response_excerpt = r.excerpt, error = r.error, duration_ms = r.duration,
      finished_at = CASE WHEN r.ok OR r.next IS NULL THEN now() END
    FROM unnest(${col('id')}::uuid[], ${col('ok')}::boolean[], ${col('statusCode')}::int[], ${col('excerpt')}::text[],
                ${col('error')}::text[], ${col('durationMs')}::int[], ${col('at')}::timestamptz[], ${col('next')}::timestamptz[])
      AS r(id, ok, code, excerpt, error, duration, at, next)
    WHERE d.project_id = ${projectId} AND d.id = r.id AND (r.ok OR d.status = 'PENDING')`.execute(trx);
}

/** Puts claimed rows that were not tried back, due at `at` (their attempt count unchanged). */
export async function deferDeliveries(db: Db, projectId: string, ids: readonly string[], at: Date): Promise<void> {
  if (ids.length === 0) return;
  await sql`
    UPDATE webhook_deliveries SET next_attempt_at = ${at}
    WHERE project_id = ${projectId} AND id = ANY(${ids}::uuid[]) AND status = 'PENDING'`.execute(db);
}

/**
 * The endpoint's health after a batch: any success clears `failing_since`; otherwise the first
 * failure of the batch starts it if it was clear. Answers the state after the update.
 */
export async function updateHealth(
  trx: Transaction<Database>,
  projectId: string,
  endpointId: string,
  batch: { anyOk: boolean; firstFailure: Date | null },
): Promise<{ enabled: boolean; failingSince: Date | null; url: string } | undefined> {
  const { rows } = await sql<{ enabled: boolean; failing_since: Date | null; url: string }>`
    UPDATE webhook_endpoints SET
      failing_since = CASE WHEN ${batch.anyOk} THEN NULL ELSE coalesce(failing_since, ${batch.firstFailure}::timestamptz) END
    WHERE project_id = ${projectId} AND id = ${endpointId}
    RETURNING enabled, failing_since, url`.execute(trx);
  const r = rows[0];
  return r && { enabled: r.enabled, failingSince: r.failing_since, url: r.url };
}

/** Disables an enabled endpoint with `reason`; false when it was not enabled. */
export async function markAutoDisabled(trx: Transaction<Database>, projectId: string, endpointId: string, reason: string): Promise<boolean> {
  const r = await trx
    .updateTable('webhook_endpoints')
    .set({ enabled: false, disabled_reason: reason, disabled_at: sql`now()`, lease_until: null, updated_at: sql`now()` })
    .where('project_id', '=', projectId)
    .where('id', '=', endpointId)
    .where('enabled', '=', true)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** When the endpoint's earliest PENDING delivery is due; null when none waits. */
export async function nextDueAt(db: Db, projectId: string, endpointId: string): Promise<Date | null> {
  const { rows } = await sql<{ at: Date | null }>`
    SELECT min(next_attempt_at) AS at FROM webhook_deliveries
    WHERE project_id = ${projectId} AND endpoint_id = ${endpointId} AND status = 'PENDING'`.execute(db);
  return rows[0]?.at ?? null;
}

/** The wake job now (key `webhook-deliver:<id>`: joins a pending one; migration 0028's `webhook_wake`). */
export async function wakeEndpoint(db: Db, projectId: string, endpointId: string): Promise<void> {
  await sql`SELECT webhook_wake(${projectId}::uuid, ${endpointId}::uuid)`.execute(db);
}

/** The retry job at `at` (key `webhook-retry:<id>`, replaced: the caller read the earliest due time). */
export async function scheduleRetryJob(db: Db, projectId: string, endpointId: string, at: Date): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.webhookDeliver}::text, json_build_object('projectId', ${projectId}::uuid, 'endpointId', ${endpointId}::uuid),
                                   run_at => ${at}::timestamptz, job_key => ${`webhook-retry:${endpointId}`}::text,
                                   job_key_mode => 'replace', max_attempts => 5)`.execute(db);
}

/**
 * The sweep: wakes every enabled, unleased endpoint with a delivery due for over 30 seconds (its
 * deliverer died, or its job was lost). Answers how many it woke.
 */
export async function wakeStrandedEndpoints(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    WITH stranded AS (
      SELECT w.project_id, w.id FROM webhook_endpoints w
      WHERE w.enabled AND (w.lease_until IS NULL OR w.lease_until <= now())
        AND EXISTS (SELECT 1 FROM webhook_deliveries d
                    WHERE d.project_id = w.project_id AND d.endpoint_id = w.id AND d.status = 'PENDING'
                      AND d.next_attempt_at <= now() - interval '30 seconds')
    )
    SELECT count(webhook_wake(project_id, id))::int AS n FROM stranded`.execute(db);
  return rows[0]?.n ?? 0;
}

/** The signed ping's row in the log (POST /webhook-endpoints/:id/test): finished at once. */
export async function insertTestDelivery(
  db: Db,
  input: { projectId: string; endpointId: string; eventId: string; eventType: string; eventAt: Date; data: Record<string, unknown>; outcome: Omit<AttemptRecord, 'id' | 'next'> },
): Promise<void> {
  const o = input.outcome;
  await db
    .insertInto('webhook_deliveries')
    .values({
      project_id: input.projectId,
      endpoint_id: input.endpointId,
      event_id: input.eventId,
      event_type: input.eventType,
      event_at: input.eventAt,
      data: JSON.stringify(input.data),
      status: o.ok ? 'DELIVERED' : 'FAILED',
      attempts: 1,
      next_attempt_at: null,
      last_attempt_at: o.at,
      status_code: o.statusCode,
      response_excerpt: o.excerpt,
      error: o.error,
      duration_ms: o.durationMs,
      finished_at: sql<Date>`now()`,
    })
    .execute();
}

/** A page of the log, newest first (uuid v7 ids); `before` is the last id of the previous page. */
export async function listDeliveryRows(
  db: Db,
  projectId: string,
  endpointId: string,
  opts: { before?: string; status?: WebhookDeliveryStatus; limit: number },
): Promise<WebhookDeliveryRow[]> {
  let q = db.selectFrom('webhook_deliveries').selectAll().where('project_id', '=', projectId).where('endpoint_id', '=', endpointId);
  if (opts.status) q = q.where('status', '=', opts.status);
  if (opts.before) q = q.where('id', '<', opts.before);
  return q.orderBy('id', 'desc').limit(opts.limit).execute();
}

/** The smallest uuid v7 of the instant `ms`: every id generated at or after it sorts above it. */
function uuidV7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * Retention: deletes finished deliveries older than `olderThan` (in batches of `batch` per
 * statement, per endpoint through the log index), and gives up any PENDING one captured more than
 * 25 hours ago (a safety net: the deliverer gives up at 24 hours). Answers the rows deleted.
 */
export async function deleteOldDeliveries(db: Kysely<Database>, olderThan: Date, batch = 5_000): Promise<number> {
  const floor = uuidV7Floor(olderThan.getTime());
  const endpoints = await db.selectFrom('webhook_endpoints').select(['project_id', 'id']).execute();
  let deleted = 0;
  for (const e of endpoints) {
    await sql`
      UPDATE webhook_deliveries SET status = 'FAILED', next_attempt_at = NULL, finished_at = now(),
        error = coalesce(error || '; ', '') || 'given up: not delivered within 24 hours'
      WHERE project_id = ${e.project_id} AND endpoint_id = ${e.id} AND status = 'PENDING' AND created_at < now() - interval '25 hours'`.execute(db);
    for (;;) {
      const r = await sql`
        DELETE FROM webhook_deliveries WHERE (project_id, id) IN (
          SELECT project_id, id FROM webhook_deliveries
          WHERE project_id = ${e.project_id} AND endpoint_id = ${e.id} AND id < ${floor}::uuid AND status <> 'PENDING'
          LIMIT ${batch})`.execute(db);
      const n = Number(r.numAffectedRows ?? 0n);
      deleted += n;
      if (n < batch) break;
    }
  }
  return deleted;
}
