import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { type FeedbackEmail, findEmailByMessageIds, findEmailsByIds, noteSoftBounce, recordMilestones } from '../emails/index.js';
import { checkProjectReputation } from '../security/index.js';
import { addSuppressions, type NewSuppression } from '../suppressions/index.js';
import { countSoftBounce, unsubscribeContacts } from './feedback.repo.js';

/**
 * THE feedback path: every delivery, bounce and complaint report about one of our emails, from
 * any source (Amazon SES through SNS: src/modules/webhooks; the inbound SMTP receiver: DSNs and
 * ARF reports, receiver.ts), is applied by {@link applyFeedback}. docs/bounces.md.
 */

/** The logging this path needs (pino's shape). */
export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What a report says about the email. `data` goes into the email.* event. */
export type FeedbackEvent =
  | { kind: 'delivery'; data: Record<string, unknown> }
  /** `reportKey` names the report (SES feedbackId, a DSN's digest): a replay counts once. */
  | { kind: 'bounce'; permanent: boolean; reportKey: string; data: Record<string, unknown> }
  /** The remote MTA is still retrying (DSN Action: delayed): noted on the email, not counted. */
  | { kind: 'delay'; data: Record<string, unknown> }
  | { kind: 'complaint'; data: Record<string, unknown> };

/**
 * Which email the report is about: by the Message-IDs it quotes (SES), by id (a verified VERP
 * address), or already loaded (a batch of the receiver: one query for all; undefined: not a project email).
 */
export type EmailRef = { messageIds: readonly string[] } | { emailId: string } | { email: FeedbackEmail | undefined };

export interface FeedbackOptions {
  autoDisable: boolean;
  /**
   * Collects the projects whose reputation must be checked instead of checking each at once: a
   * batch checks each project once, after all its reports ({@link checkReputations}).
   */
  deferReputation?: Set<string>;
}

export type Outcome =
  | 'unknown-email'
  | 'recorded'
  | 'duplicate'
  | 'soft-bounce'
  | 'hard-after-soft-bounces'
  | 'delayed'
  | 'not-trackable';

/**
 * The repeated-soft-bounce rule (docs/bounces.md): an address whose emails soft-bounced
 * SOFT_BOUNCE_LIMIT times (distinct emails) over at least SOFT_BOUNCE_SPAN_HOURS, within
 * SOFT_BOUNCE_WINDOW_DAYS and with no sign of life in between, is treated as a hard bounce.
 */
export const SOFT_BOUNCE_LIMIT = 3;
export const SOFT_BOUNCE_SPAN_HOURS = 72;
export const SOFT_BOUNCE_WINDOW_DAYS = 30;

/** A suppression's detail: the bounce type and diagnostic, or the complaint's feedback type. */
function detailOf(data: Record<string, unknown>): string | null {
  const parts = [data.bounceType, data.bounceSubType, data.diagnosticCode, data.complaintFeedbackType].filter((v) => typeof v === 'string');
  return parts.length > 0 ? parts.join(': ').slice(0, 1000) : null;
}

async function findEmail(trx: Transaction<Database>, ref: EmailRef): Promise<FeedbackEmail | undefined> {
  if ('email' in ref) return ref.email;
  if ('emailId' in ref) return (await findEmailsByIds(trx, [ref.emailId])).get(ref.emailId);
  return findEmailByMessageIds(trx, ref.messageIds);
}

/**
 * The deliverability check after a hard bounce or complaint (docs/security.md): it may suspend
 * the project, which is logged with how to lift it.
 */
async function checkReputation(trx: Transaction<Database>, projectId: string, log: Logger, opts: { autoDisable: boolean }): Promise<void> {
  const check = await checkProjectReputation(trx, projectId, opts);
  if (check?.disabledReason) {
    log.warn(
      { projectId, reason: check.disabledReason, critical: check.assessment.critical },
      `project ${projectId} auto-disabled: ${check.disabledReason}; lift with: npm run admin -- enable-project --project ${projectId}`,
    );
  } else if (!opts.autoDisable && check?.assessment.level === 'critical') {
    log.warn({ projectId, critical: check.assessment.critical }, `project ${projectId} is at a critical deliverability level (AUTO_DISABLE_PROJECTS=false)`);
  }
}

/** The deferred checks of a batch ({@link FeedbackOptions.deferReputation}), each project once. */
export async function checkReputations(trx: Transaction<Database>, projectIds: Iterable<string>, log: Logger, opts: { autoDisable: boolean }): Promise<void> {
  for (const projectId of [...new Set(projectIds)].sort()) await checkReputation(trx, projectId, log, opts);
}

/** One report of a batch, its email already loaded (undefined: not a project email). */
export interface FeedbackItem {
  email: FeedbackEmail | undefined;
  event: FeedbackEvent;
}

/** A milestone waiting for the batch's next set-based write. */
interface PendingMilestone {
  index: number;
  email: FeedbackEmail;
  status: 'DELIVERED' | 'BOUNCED' | 'COMPLAINED';
  data: Record<string, unknown>;
  /** The outcome when this report sets the milestone first. */
  outcome: Outcome;
}

const addressKey = (email: FeedbackEmail) => `${email.project_id}\n${email.to_email.toLowerCase()}`;

/**
 * Applies reports, in the caller's transaction, with the outcome of applying them one by one in
 * order (each one's rules below), in a few statements per batch rather than per report:
 * - delivery → DELIVERED;
 * - hard (permanent) bounce → BOUNCED, the contact unsubscribed, the address suppressed, the
 *   project's reputation checked (security metrics, auto-disable);
 * - soft (transient) bounce → counted (soft_bounces) and noted on the email; no status change,
 *   no unsubscribe; once the address meets the repeated-soft-bounce rule it is a hard bounce;
 * - delay → noted on the email;
 * - complaint → COMPLAINED, the contact unsubscribed, the address suppressed, the reputation checked.
 * Statuses never move backwards. A repeated report (in this batch or an earlier one) records
 * nothing new, counts nothing again, and unsubscribes or suppresses no one again.
 *
 * How: milestones (deliveries, hard bounces, complaints) wait and are written together
 * (recordMilestones: one UPDATE of the emails, one INSERT of their events; then one UPDATE of
 * the contacts to unsubscribe and one INSERT of the suppressions). Soft bounces and delays are
 * applied as they come, one by one (a soft bounce: its count with its streak in one statement, and
 * the note on the email); a soft bounce first writes the waiting milestones when one of
 * them is a delivery to its address (a sign of life its streak must see). Nothing else a soft
 * bounce reads (its address's soft bounces, the deliveries, opens and clicks of its contact's
 * emails) is written by a waiting bounce or complaint, so the order of effects is the same.
 * Reputation: each project once, after the batch (`opts.deferReputation`: the caller's, later).
 */
export async function applyFeedbackBatchIn(trx: Transaction<Database>, items: readonly FeedbackItem[], log: Logger, opts: FeedbackOptions): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array<Outcome>(items.length).fill('unknown-email');
  const reputation = opts.deferReputation ?? new Set<string>();
  let pending: PendingMilestone[] = [];
  /** Addresses with a delivery among the pending milestones. */
  const pendingDeliveries = new Set<string>();

  const flush = async () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    pendingDeliveries.clear();
    const changes = await recordMilestones(
      trx,
      batch.map((p) => ({ emailId: p.email.id, status: p.status, data: p.data })),
    );
    const unsubscribe: { projectId: string; contactId: string }[] = [];
    const suppress: NewSuppression[] = [];
    batch.forEach((p, i) => {
      const change = changes[i];
      outcomes[p.index] = !change ? 'not-trackable' : !change.first ? 'duplicate' : p.outcome;
      if (!change?.first || p.status === 'DELIVERED') return;
      if (change.contactId) unsubscribe.push({ projectId: change.projectId, contactId: change.contactId });
      // The address itself is never sent to again, transactional mail included (docs/suppressions.md).
      suppress.push({
        projectId: p.email.project_id,
        email: p.email.to_email,
        reason: p.status === 'BOUNCED' ? 'HARD_BOUNCE' : 'COMPLAINT',
        detail: detailOf(p.data),
        sourceEmailId: p.email.id,
      });
      reputation.add(change.projectId);
    });
    await unsubscribeContacts(trx, unsubscribe);
    // In report order: of a bounce and a complaint of one address, the first names the entry.
    await addSuppressions(trx, suppress);
  };

  for (const [index, { email, event }] of items.entries()) {
    if (!email) continue;
    if (event.kind === 'delivery') {
      pending.push({ index, email, status: 'DELIVERED', data: event.data, outcome: 'recorded' });
      pendingDeliveries.add(addressKey(email));
      continue;
    }
    if (event.kind === 'delay') {
      await noteSoftBounce(trx, email.id, `Delivery delayed: ${detailOf(event.data) ?? 'no reason given'}`);
      outcomes[index] = 'delayed';
      continue;
    }
    if (event.kind === 'complaint' || event.permanent) {
      pending.push({ index, email, status: event.kind === 'complaint' ? 'COMPLAINED' : 'BOUNCED', data: event.data, outcome: 'recorded' });
      continue;
    }
    if (pendingDeliveries.has(addressKey(email))) await flush();
    const soft = await applySoftBounce(trx, email, event);
    if (typeof soft === 'string') outcomes[index] = soft;
    else pending.push({ index, email, status: 'BOUNCED', data: soft.data, outcome: 'hard-after-soft-bounces' });
  }
  await flush();
  if (!opts.deferReputation) await checkReputations(trx, reputation, log, opts);
  return outcomes;
}

/**
 * Counts a soft bounce and notes it on the email; answers its outcome, or the data of the hard
 * bounce it becomes when its address now meets the repeated-soft-bounce rule.
 */
async function applySoftBounce(
  trx: Transaction<Database>,
  email: FeedbackEmail,
  event: Extract<FeedbackEvent, { kind: 'bounce' }>,
): Promise<Outcome | { data: Record<string, unknown> }> {
  const reason = detailOf(event.data);
  const streak = await countSoftBounce(trx, {
    projectId: email.project_id,
    address: email.to_email,
    emailId: email.id,
    contactId: email.contact_id,
    reportKey: event.reportKey,
    detail: reason,
    windowDays: SOFT_BOUNCE_WINDOW_DAYS,
  });
  if (!streak) return 'duplicate';
  await noteSoftBounce(trx, email.id, `Soft bounce: ${reason ?? 'no reason given'}`);
  const spanHours = streak.first && streak.last ? (streak.last.getTime() - streak.first.getTime()) / 3_600_000 : 0;
  if (streak.emails < SOFT_BOUNCE_LIMIT || spanHours < SOFT_BOUNCE_SPAN_HOURS) return 'soft-bounce';
  // The rule is met: this bounce is the address's hard bounce.
  return {
    data: {
      ...event.data,
      bounceType: 'Permanent',
      bounceSubType: 'RepeatedSoftBounces',
      softBounces: streak.emails,
      softBouncesSince: streak.first?.toISOString(),
    },
  };
}

/** Applies one report, in the caller's transaction: {@link applyFeedbackBatchIn} of one. */
export async function applyFeedbackIn(
  trx: Transaction<Database>,
  ref: EmailRef,
  event: FeedbackEvent,
  log: Logger,
  opts: FeedbackOptions,
): Promise<Outcome> {
  const [outcome = 'unknown-email'] = await applyFeedbackBatchIn(trx, [{ email: await findEmail(trx, ref), event }], log, opts);
  return outcome;
}

/** {@link applyFeedbackIn} in a transaction of its own. */
export async function applyFeedback(db: Kysely<Database>, ref: EmailRef, event: FeedbackEvent, log: Logger, opts: { autoDisable: boolean }): Promise<Outcome> {
  return db.transaction().execute((trx) => applyFeedbackIn(trx, ref, event, log, opts));
}
