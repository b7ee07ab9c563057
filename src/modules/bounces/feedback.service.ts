import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { type FeedbackEmail, findEmailByMessageIds, findEmailsByIds, noteSoftBounce, recordMilestone } from '../emails/index.js';
import { checkProjectReputation } from '../security/index.js';
import { addSuppressions } from '../suppressions/index.js';
import { insertSoftBounce, softBounceStreak, unsubscribeContact } from './feedback.repo.js';

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

/**
 * Applies one report, in the caller's transaction:
 * - delivery → DELIVERED;
 * - hard (permanent) bounce → BOUNCED, the contact unsubscribed, the address suppressed, the
 *   project's reputation checked (security metrics, auto-disable);
 * - soft (transient) bounce → counted (soft_bounces) and noted on the email; no status change,
 *   no unsubscribe; once the address meets the repeated-soft-bounce rule it is a hard bounce;
 * - delay → noted on the email;
 * - complaint → COMPLAINED, the contact unsubscribed, the address suppressed, the reputation checked.
 * Statuses never move backwards (recordMilestone). A repeated report records nothing new, counts
 * nothing again, and unsubscribes or suppresses no one again.
 */
export async function applyFeedbackIn(
  trx: Transaction<Database>,
  ref: EmailRef,
  event: FeedbackEvent,
  log: Logger,
  opts: FeedbackOptions,
): Promise<Outcome> {
  const email = await findEmail(trx, ref);
  if (!email) return 'unknown-email';
  if (event.kind === 'delivery') {
    const change = await recordMilestone(trx, { emailId: email.id, status: 'DELIVERED', data: event.data });
    return !change ? 'not-trackable' : change.first ? 'recorded' : 'duplicate';
  }
  if (event.kind === 'delay') {
    await noteSoftBounce(trx, email.id, `Delivery delayed: ${detailOf(event.data) ?? 'no reason given'}`);
    return 'delayed';
  }
  let data = event.data;
  let outcome: Outcome = 'recorded';
  if (event.kind === 'bounce' && !event.permanent) {
    const reason = detailOf(event.data);
    const counted = await insertSoftBounce(trx, { projectId: email.project_id, address: email.to_email, emailId: email.id, reportKey: event.reportKey, detail: reason });
    if (!counted) return 'duplicate';
    await noteSoftBounce(trx, email.id, `Soft bounce: ${reason ?? 'no reason given'}`);
    const streak = await softBounceStreak(trx, { projectId: email.project_id, address: email.to_email, contactId: email.contact_id, windowDays: SOFT_BOUNCE_WINDOW_DAYS });
    const spanHours = streak.first && streak.last ? (streak.last.getTime() - streak.first.getTime()) / 3_600_000 : 0;
    if (streak.emails < SOFT_BOUNCE_LIMIT || spanHours < SOFT_BOUNCE_SPAN_HOURS) return 'soft-bounce';
    // The rule is met: this bounce is the address's hard bounce.
    data = {
      ...event.data,
      bounceType: 'Permanent',
      bounceSubType: 'RepeatedSoftBounces',
      softBounces: streak.emails,
      softBouncesSince: streak.first?.toISOString(),
    };
    outcome = 'hard-after-soft-bounces';
  }
  const status = event.kind === 'complaint' ? 'COMPLAINED' : 'BOUNCED';
  const change = await recordMilestone(trx, { emailId: email.id, status, data });
  if (!change) return 'not-trackable';
  if (!change.first) return 'duplicate';
  if (change.contactId) await unsubscribeContact(trx, change.projectId, change.contactId);
  // The address itself is never sent to again, transactional mail included (docs/suppressions.md).
  await addSuppressions(trx, [
    { projectId: email.project_id, email: email.to_email, reason: status === 'BOUNCED' ? 'HARD_BOUNCE' : 'COMPLAINT', detail: detailOf(data), sourceEmailId: email.id },
  ]);
  if (opts.deferReputation) opts.deferReputation.add(change.projectId);
  else await checkReputation(trx, change.projectId, log, opts);
  return outcome;
}

/** {@link applyFeedbackIn} in a transaction of its own. */
export async function applyFeedback(db: Kysely<Database>, ref: EmailRef, event: FeedbackEvent, log: Logger, opts: { autoDisable: boolean }): Promise<Outcome> {
  return db.transaction().execute((trx) => applyFeedbackIn(trx, ref, event, log, opts));
}
