import { type Kysely, sql, type Transaction } from 'kysely';
import type { BillingConfig } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import {
  campaignHasUnfinishedEmailsSql,
  insertCampaignEmails,
  queueCampaignBatches,
  recoverStalledCampaignEmails,
} from '../emails/index.js';
import { enforceEmailCap } from '../billing/index.js';
import { audienceSql, countCampaignRecipients } from './audience.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Fan-out and completion of a campaign (DESIGN §8), exactly once:
 * - the recipients are materialised ONCE, set-based (INSERT … SELECT over contacts, in parallel
 *   parts on one snapshot: emails module insertCampaignEmails), then their delivery batch jobs
 *   and total_recipients are committed by the transaction that holds the campaign's row lock: the
 *   jobs exist only once the campaign is materialised (total_recipients > 0 is the marker), a
 *   crash before that commit leaves rows without jobs that the re-run completes, and the unique
 *   (campaign_id, contact_id) index makes a second email per contact impossible;
 * - completion (SENDING → SENT) is a guarded UPDATE run by a per-campaign check job that
 *   re-enqueues itself while emails are pending, and by a cron sweep every minute.
 */

/**
 * Attempts of the campaign-send job: e + e² + e³ + e⁴ ≈ 85 s of graphile-worker backoff between
 * the five, so a start that keeps failing ends the campaign within minutes (start-failure.ts).
 */
export const START_MAX_ATTEMPTS = 5;

/** Job keys: one start job and one completion check per campaign (graphile-worker de-duplicates). */
export const startJobKey = (campaignId: string) => `campaign-send:${campaignId}`;
export const completeJobKey = (campaignId: string) => `campaign-complete:${campaignId}`;

/** How long the completion check waits between looks. */
export const COMPLETE_CHECK_DELAY_MS = 3_000;

/** Enqueues the campaign-send job (now, or at `runAt` for a scheduled campaign), in the caller's transaction. */
export async function enqueueCampaignStart(trx: Db, campaignId: string, runAt?: Date): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.campaignSend}, json_build_object('campaignId', ${campaignId}::text),
      run_at := ${runAt ?? null}::timestamptz, job_key := ${startJobKey(campaignId)}, priority := ${JobPriority.campaign}::int,
      max_attempts := ${START_MAX_ATTEMPTS}::int)`.execute(trx);
}

/** Enqueues (or pushes back) the completion check of a campaign. */
export async function enqueueCompletionCheck(trx: Db, campaignId: string, delayMs = COMPLETE_CHECK_DELAY_MS): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.campaignComplete}, json_build_object('campaignId', ${campaignId}::text),
      run_at := now() + make_interval(secs => ${delayMs / 1000}::float8), job_key := ${completeJobKey(campaignId)},
      priority := ${JobPriority.campaign}::int)`.execute(trx);
}

/** Removes a scheduled start that has not run yet (a running or finished one is left: it re-checks the state). */
export async function removeCampaignStart(trx: Db, campaignId: string): Promise<void> {
  await sql`SELECT graphile_worker.remove_job(${startJobKey(campaignId)})`.execute(trx);
}

export type FanOutOutcome =
  | { kind: 'materialised'; recipients: number }
  | { kind: 'already' }
  | { kind: 'not-sending'; status: string }
  | { kind: 'not-due' };

/**
 * The campaign-send job's work: a due SCHEDULED campaign becomes SENDING (committed at once),
 * then a SENDING campaign not materialised yet (total_recipients 0: a materialised one has at
 * least one row, or is SENT) gets its email rows (one per audience contact; MARKETING skips
 * unsubscribed contacts; a suppressed address's row is CANCELLED with the reason), inserted by
 * parallel transactions on this one's snapshot (insertCampaignEmails), then, in this
 * transaction, the delivery batch jobs at campaign priority, total_recipients (all rows) and a
 * completion check. An audience with nothing to deliver completes at once (SENT). Safe to run any
 * number of times: a run cut between the rows and this commit is completed by the next.
 */
export async function runCampaignSend(db: Kysely<Database>, campaignId: string, billing?: BillingConfig): Promise<FanOutOutcome> {
  const started = await db.transaction().execute(async (trx): Promise<FanOutOutcome | undefined> => {
    const campaign = await trx.selectFrom('campaigns').select(['status', 'scheduled_for']).where('id', '=', campaignId).forUpdate().executeTakeFirst();
    if (!campaign) return { kind: 'not-sending', status: 'DELETED' };
    if (campaign.status === 'SCHEDULED') {
      if (campaign.scheduled_for && campaign.scheduled_for.getTime() > Date.now() + 1000) return { kind: 'not-due' };
      await trx.updateTable('campaigns').set({ status: 'SENDING', started_at: sql<Date>`now()`, updated_at: sql`now()` }).where('id', '=', campaignId).execute();
      return undefined;
    }
    return campaign.status === 'SENDING' ? undefined : { kind: 'not-sending', status: campaign.status };
  });
  if (started) return started;

  return db.transaction().execute(async (trx) => {
    // NO KEY UPDATE: excludes other runs, cancels and edits, not the foreign-key checks (KEY SHARE) of the inserting parts.
    const campaign = await trx.selectFrom('campaigns').selectAll().where('id', '=', campaignId).forNoKeyUpdate().executeTakeFirst();
    if (!campaign) return { kind: 'not-sending', status: 'DELETED' };
    if (campaign.status !== 'SENDING') return { kind: 'not-sending', status: campaign.status };
    if (campaign.total_recipients > 0) return { kind: 'already' };

    // Over a monthly cap (it filled since the send was accepted): 402 before any row is written; start-failure ends the campaign.
    const cap = { projectId: campaign.project_id, category: 'campaign' as const };
    await enforceEmailCap(trx, billing, { ...cap, count: () => countCampaignRecipients(trx, campaign), dryRun: true });
    // Who: the campaign's audience; the rows themselves (content, suppressions, jobs) are the emails module's.
    await insertCampaignEmails(db, trx, {
      projectId: campaign.project_id,
      campaignId,
      type: campaign.type,
      fromEmail: campaign.from_email,
      fromName: campaign.from_name,
      replyTo: campaign.reply_to,
      subject: campaign.subject,
      body: campaign.body,
      audience: await audienceSql(trx, campaign),
    });
    const { total, queued } = await queueCampaignBatches(trx, campaignId);
    // Counted for real with the rows; filled meanwhile by other mail: 402 rolls the jobs back, start-failure cancels the rows.
    await enforceEmailCap(trx, billing, { ...cap, count: queued });
    const done = queued === 0;
    await trx
      .updateTable('campaigns')
      .set({ total_recipients: total, updated_at: sql`now()`, ...(done && { status: 'SENT', sent_at: sql`now()` }) })
      .where('id', '=', campaignId)
      .execute();
    if (!done) await enqueueCompletionCheck(trx, campaignId);
    return { kind: 'materialised', recipients: total };
  });
}

/**
 * SENDING → SENT for the given campaigns (or every SENDING campaign) whose emails are all
 * finished (SENT or later, FAILED or CANCELLED). A campaign whose recipients are not
 * materialised yet (total_recipients 0) is left alone. Returns the ids completed.
 */
export async function completeFinishedCampaigns(db: Db, campaignIds?: readonly string[]): Promise<string[]> {
  const only = campaignIds ? sql`AND c.id = ANY(${campaignIds}::uuid[])` : sql``;
  const { rows } = await sql<{ id: string }>`
    UPDATE campaigns c SET status = 'SENT', sent_at = now(), updated_at = now()
    WHERE c.status = 'SENDING' ${only}
      AND c.total_recipients > 0
      AND NOT ${campaignHasUnfinishedEmailsSql(sql.ref('c.id'))}
    RETURNING c.id`.execute(db);
  return rows.map((r) => r.id);
}

/** The campaign-complete job: SENT when finished; 'pending' when it must look again. */
export async function checkCampaignCompletion(db: Kysely<Database>, campaignId: string): Promise<'sent' | 'pending' | 'not-sending'> {
  if ((await completeFinishedCampaigns(db, [campaignId])).length > 0) return 'sent';
  const row = await db.selectFrom('campaigns').select('status').where('id', '=', campaignId).executeTakeFirst();
  return row?.status === 'SENDING' ? 'pending' : 'not-sending';
}

/**
 * The cron sweep (every minute): completes finished SENDING campaigns, recovers their stalled
 * emails (recoverStalledCampaignEmails), and re-enqueues the start job of SENDING campaigns not yet materialised and of
 * SCHEDULED campaigns overdue by a minute (both normally impossible: the jobs are written with
 * the state; this is the net under a lost job). Job keys make a re-enqueue of a live job harmless;
 * a start job that used its attempts is reset, and ends the campaign if it keeps failing
 * (start-failure.ts).
 */
export async function sweepCampaigns(db: Kysely<Database>): Promise<{ completed: number; restarted: number; recovered: number }> {
  const { requeued, failed } = await recoverStalledCampaignEmails(db);
  const completed = await completeFinishedCampaigns(db);
  const { rows } = await sql<{ n: number }>`
    SELECT count(graphile_worker.add_job(${Tasks.campaignSend}, json_build_object('campaignId', c.id::text),
             job_key := 'campaign-send:' || c.id::text, priority := ${JobPriority.campaign}::int,
             max_attempts := ${START_MAX_ATTEMPTS}::int))::int AS n
    FROM campaigns c
    WHERE (c.status = 'SENDING' AND c.total_recipients = 0)
       OR (c.status = 'SCHEDULED' AND c.scheduled_for < now() - interval '1 minute')`.execute(db);
  return { completed: completed.length, restarted: rows[0]?.n ?? 0, recovered: requeued + failed };
}
