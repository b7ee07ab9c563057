import { type Kysely, type RawBuilder, sql, type SqlBool, type Transaction } from 'kysely';
import type { Database, EmailType } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { messageIdParts } from '../../mail/address.js';
import { suppressionJoinSql, suppressionNoteSql } from '../suppressions/index.js';
import { enqueueEmails } from './emails.repo.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * The email rows of campaigns (docs/campaigns.md): their materialisation, cancel, stats and the
 * completion/sweep conditions. The campaigns module decides who (its audience SQL) and when;
 * every write to `emails` is here.
 */

/**
 * Campaign mail is delivered in batches (docs/campaigns.md "Delivery batches"): one
 * `campaign-deliver` job per CAMPAIGN_BATCH_SIZE emails (a range of their ids), not one job per
 * email. Each runs CAMPAIGN_BATCH_CONCURRENCY deliveries at once, and a campaign's batches go
 * through CAMPAIGN_LANES named queues, so one campaign holds at most that many of a worker's job
 * slots (transactional mail keeps the others) however many batches are queued.
 */
export const CAMPAIGN_BATCH_SIZE = 500;
export const CAMPAIGN_BATCH_CONCURRENCY = 16;
export const CAMPAIGN_LANES = 2;
/** Attempts of a batch job (a run fails only when the database does: each email's own failures are its own). */
export const CAMPAIGN_BATCH_MAX_ATTEMPTS = 25;

/** What one campaign materialises: its content (stored as templates, rendered at delivery) and its audience. */
export interface CampaignAudience {
  projectId: string;
  campaignId: string;
  type: EmailType;
  fromEmail: string;
  fromName: string | null;
  replyTo: string | null;
  subject: string;
  body: string;
  /** A boolean over the project's contacts, aliased `c` (the audience: ALL, segment, condition). */
  audience: RawBuilder<SqlBool>;
}

/**
 * A materialisation's rows are inserted by this many transactions at once, each taking the
 * contacts whose id hashes to its part, all reading one snapshot (docs/campaigns.md
 * "Materialisation"): the heap, index and foreign-key work of a big audience is a core's work
 * per part.
 */
export const MATERIALISE_PARTS = 2;

/**
 * The email rows of a campaign's audience, one per contact, inserted in MATERIALISE_PARTS
 * transactions of their own (committed before the caller's) that import the caller's snapshot:
 * together they insert exactly the audience the caller sees. The caller holds the campaign's row
 * lock (FOR NO KEY UPDATE: the parts' foreign-key checks take KEY SHARE on it) and commits the
 * campaign's materialised state after them ({@link queueCampaignBatches}); if it never does, a
 * re-run inserts what is missing (ON CONFLICT on (campaign_id, contact_id, project_id)) on its own snapshot.
 * MARKETING skips unsubscribed contacts. Subject and body are stored as templates: delivery
 * renders them with the contact's data at that moment (delivery/personalise.ts). A suppressed
 * address's row is CANCELLED with the reason: visible per email and counted as cancelled in the
 * stats, like every other recipient not sent to. Every part is waited for; the first error is
 * thrown.
 */
export async function insertCampaignEmails(db: Kysely<Database>, trx: Transaction<Database>, a: CampaignAudience): Promise<void> {
  const { rows } = await sql<{ snapshot: string }>`SELECT pg_export_snapshot() AS snapshot`.execute(trx);
  const snapshot = rows[0]?.snapshot ?? '';
  if (!/^[0-9A-F-]+$/i.test(snapshot)) throw new Error(`unexpected snapshot id ${JSON.stringify(snapshot)}`);
  const parts = await Promise.allSettled(
    Array.from({ length: MATERIALISE_PARTS }, (_, part) =>
      db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (partTrx) => {
          await sql`SET TRANSACTION SNAPSHOT ${sql.lit(snapshot)}`.execute(partTrx);
          await insertCampaignEmailsPart(partTrx, a, part, MATERIALISE_PARTS);
        }),
    ),
  );
  for (const p of parts) if (p.status === 'rejected') throw p.reason;
}

/** One part's rows: the audience contacts whose id hashes to `part` of `parts` (a transaction's worth). */
export async function insertCampaignEmailsPart(trx: Transaction<Database>, a: CampaignAudience, part: number, parts: number): Promise<void> {
  const marketing = a.type === 'MARKETING' ? sql`AND c.subscribed` : sql``;
  const { prefix, suffix } = messageIdParts(a.fromEmail);
  await sql`
    INSERT INTO emails (id, project_id, contact_id, source, type, campaign_id, to_email, from_email, from_name, reply_to,
                        subject, html, message_id, status, error)
    SELECT r.id, ${a.projectId}, r.contact_id, 'CAMPAIGN', ${a.type}, ${a.campaignId}, r.email,
           ${a.fromEmail}, ${a.fromName}, ${a.replyTo}, ${a.subject}, ${a.body},
           ${prefix}::text || r.id::text || ${suffix}::text, CASE WHEN r.suppressed IS NULL THEN 'PENDING' ELSE 'CANCELLED' END, r.suppressed
    FROM (SELECT uuid_generate_v7() AS id, c.id AS contact_id, c.email, ${suppressionNoteSql('sup')} AS suppressed
          FROM contacts c ${suppressionJoinSql(a.projectId, sql.ref('c.email'), 'sup')}
          WHERE c.project_id = ${a.projectId} AND (${a.audience}) ${marketing}
            AND abs(hashtext(c.id::text)::bigint) % ${parts}::int = ${part}::int) r
    ON CONFLICT (campaign_id, contact_id, project_id) WHERE campaign_id IS NOT NULL DO NOTHING`.execute(trx);
}

/**
 * The campaign's delivery batch jobs, over its PENDING emails in id order (a suppressed
 * address's CANCELLED row is in none), in ONE statement in the caller's transaction. Answers
 * the campaign's rows and how many were queued.
 */
export async function queueCampaignBatches(trx: Transaction<Database>, campaignId: string): Promise<{ total: number; queued: number }> {
  const { rows } = await sql<{ total: number; queued: number }>`
    WITH queued AS (
      SELECT id, (row_number() OVER (ORDER BY id) - 1) / ${CAMPAIGN_BATCH_SIZE}::int AS n
      FROM emails WHERE campaign_id = ${campaignId} AND status = 'PENDING'
    ),
    batches AS (
      SELECT n, (array_agg(id ORDER BY id))[1] AS first, (array_agg(id ORDER BY id DESC))[1] AS last FROM queued GROUP BY n
    )
    SELECT (SELECT count(*) FROM emails WHERE campaign_id = ${campaignId})::int AS total, (SELECT count(*) FROM queued)::int AS queued,
      (SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
        SELECT ROW(${Tasks.campaignDeliver}::text, json_build_object('campaignId', ${campaignId}::text, 'first', b.first, 'last', b.last),
                   ${campaignLane(campaignId, sql`b.n`)}, NULL::timestamptz, ${CAMPAIGN_BATCH_MAX_ATTEMPTS}::int,
                   ${`${Tasks.campaignDeliver}:`}::text || b.n::text || ':' || ${campaignId}::text, ${JobPriority.campaign}::int,
                   NULL::text[])::graphile_worker.job_spec
        FROM batches b))) AS jobs`.execute(trx);
  const { total = 0, queued = 0 } = rows[0] ?? {};
  return { total, queued };
}

/** SQL: the named queue (lane) of a campaign's batch number `n`. */
const campaignLane = (campaignId: string, n: RawBuilder<unknown>) =>
  sql<string>`${`${Tasks.campaignDeliver}:`}::text || ${campaignId}::text || ':' || (${n} % ${CAMPAIGN_LANES}::int)::text`;

/**
 * The emails of one delivery batch still to deliver: the campaign's PENDING ones in the id range,
 * and SENDING ones (an earlier run of the batch was interrupted: delivery settles them by their
 * end-of-data stage), in id order.
 */
export async function campaignBatchEmailIds(db: Db, batch: { campaignId: string; first: string; last: string }): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    SELECT id FROM emails
    WHERE id BETWEEN ${batch.first}::uuid AND ${batch.last}::uuid AND campaign_id = ${batch.campaignId}::uuid
      AND status IN ('PENDING', 'SENDING')
    ORDER BY id`.execute(db);
  return rows.map((r) => r.id);
}

/** Every email of the campaign not handed to the relay yet becomes CANCELLED, in one statement. */
export async function cancelPendingCampaignEmails(trx: Db, campaignId: string, error = 'Not sent: the campaign was cancelled'): Promise<number> {
  const result = await trx
    .updateTable('emails')
    .set({ status: 'CANCELLED', error, updated_at: sql`now()` })
    .where('campaign_id', '=', campaignId)
    .where('status', '=', 'PENDING')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** SQL: the campaign `campaignId` (a column reference) has an email still to deliver (PENDING or SENDING). */
export const campaignHasUnfinishedEmailsSql = (campaignId: RawBuilder<unknown>): RawBuilder<SqlBool> =>
  sql<SqlBool>`EXISTS (SELECT 1 FROM emails e WHERE e.campaign_id = ${campaignId} AND e.status IN ('PENDING', 'SENDING'))`;

/** A PENDING campaign email untouched this long is looked at by the sweep (a live one has a runnable job). */
export const STALLED_EMAIL_AFTER = '10 minutes';

/**
 * The net under lost delivery jobs, so that campaign completion can always happen: PENDING emails
 * of SENDING campaigns, untouched for STALLED_EMAIL_AFTER, with no delivery batch of their
 * campaign left to run (queued, running, or with attempts left) and no send-email job of their
 * own, get one (delivery is exactly once whatever runs it); those whose own job used all its
 * attempts without recording the outcome (its last write failed) become FAILED with the job's
 * last error. Both set-based. Returns how many of each.
 */
export async function recoverStalledCampaignEmails(db: Kysely<Database>): Promise<{ requeued: number; failed: number }> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ id: string; exhausted: boolean; last_error: string | null }>`
      WITH batching AS (
        SELECT DISTINCT b.payload ->> 'campaignId' AS campaign_id
        FROM graphile_worker._private_jobs b JOIN graphile_worker._private_tasks t ON t.id = b.task_id
        WHERE t.identifier = ${Tasks.campaignDeliver} AND (b.locked_at IS NOT NULL OR b.attempts < b.max_attempts)
      )
      SELECT e.id, j.id IS NOT NULL AS exhausted, j.last_error
      FROM campaigns c
      JOIN emails e ON e.campaign_id = c.id AND e.status = 'PENDING'
      LEFT JOIN graphile_worker._private_jobs j ON j.key = e.id::text
      WHERE c.status = 'SENDING' AND e.updated_at < now() - ${STALLED_EMAIL_AFTER}::interval
        AND NOT EXISTS (SELECT 1 FROM batching b WHERE b.campaign_id = c.id::text)
        AND (j.id IS NULL OR (j.locked_at IS NULL AND j.attempts >= j.max_attempts))
      LIMIT 10000
      FOR UPDATE OF e SKIP LOCKED`.execute(trx);
    const lost = rows.filter((r) => !r.exhausted).map((r) => r.id);
    const exhausted = rows.filter((r) => r.exhausted);
    await enqueueEmails(trx, lost, { priority: JobPriority.campaign });
    if (lost.length > 0) await sql`UPDATE emails SET updated_at = now() WHERE id = ANY(${lost}::uuid[])`.execute(trx);
    if (exhausted.length > 0) {
      await sql`
        UPDATE emails e SET status = 'FAILED', failed_at = now(), updated_at = now(),
          error = 'Gave up: its delivery job used every attempt' || coalesce(': ' || left(x.last_error, 300), '')
        FROM unnest(${exhausted.map((r) => r.id)}::uuid[], ${exhausted.map((r) => r.last_error)}::text[]) AS x(id, last_error)
        WHERE e.id = x.id AND e.status = 'PENDING'`.execute(trx);
    }
    return { requeued: lost.length, failed: exhausted.length };
  });
}

/** Milestone counts of one campaign's emails (never stored: no racy counters). */
export interface CampaignEmailCounts {
  total: number;
  pending: number;
  /** Handed to the relay and confirmed by its 250 (or by a later delivery, open…); unconfirmed ones apart. */
  sent: number;
  /** SENT without the relay's reply (docs/sending.md "Exactly once"): maybe delivered, never resent. */
  unconfirmed: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  cancelled: number;
}

/**
 * Counts of the given campaigns' emails in ONE grouped aggregate. A milestone counts once it
 * happened (its timestamp is set), whatever happened later: a clicked email was also sent,
 * delivered and opened.
 */
export async function countCampaignEmails(db: Db, campaignIds: readonly string[]): Promise<Map<string, CampaignEmailCounts>> {
  const counts = new Map<string, CampaignEmailCounts>();
  if (campaignIds.length === 0) return counts;
  const { rows } = await sql<CampaignEmailCounts & { campaign_id: string }>`
    SELECT campaign_id,
      count(*)::int AS total,
      count(*) FILTER (WHERE status IN ('PENDING', 'SENDING'))::int AS pending,
      count(sent_at) FILTER (WHERE NOT unconfirmed)::int AS sent,
      count(*) FILTER (WHERE unconfirmed)::int AS unconfirmed,
      count(delivered_at)::int AS delivered,
      count(opened_at)::int AS opened,
      count(clicked_at)::int AS clicked,
      count(bounced_at)::int AS bounced,
      count(complained_at)::int AS complained,
      count(*) FILTER (WHERE status = 'FAILED')::int AS failed,
      count(*) FILTER (WHERE status = 'CANCELLED')::int AS cancelled
    FROM emails
    WHERE campaign_id = ANY(${campaignIds}::uuid[])
    GROUP BY campaign_id`.execute(db);
  for (const { campaign_id: id, ...c } of rows) counts.set(id, c);
  return counts;
}
