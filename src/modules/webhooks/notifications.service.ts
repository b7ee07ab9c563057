import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { countRecentSends, findEmailByMessageIds, noteSoftBounce, recordMilestone } from '../emails/index.js';
import { addSuppressions } from '../suppressions/index.js';
import { enqueueProjectCancel } from '../workflows/index.js';
import { disableProjectIfUnhealthy, REPUTATION, unsubscribeContact } from './notifications.repo.js';
import type { DeliveryEvent } from './ses.js';

/** The logging this service needs (pino's shape). */
export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export type Outcome = 'unknown-email' | 'recorded' | 'duplicate' | 'soft-bounce' | 'not-trackable';

const percent = (part: number, whole: number) => `${((100 * part) / whole).toFixed(2)}%`;

/** A suppression's detail: the bounce type and diagnostic, or the complaint's feedback type. */
function detailOf(data: Record<string, unknown>): string | null {
  const parts = [data.bounceType, data.bounceSubType, data.diagnosticCode, data.complaintFeedbackType].filter((v) => typeof v === 'string');
  return parts.length > 0 ? parts.join(': ').slice(0, 1000) : null;
}

/**
 * Applies one delivery notification in one transaction:
 * - delivery → DELIVERED;
 * - hard (Permanent) bounce → BOUNCED, the contact unsubscribed, the address suppressed, the
 *   project's reputation checked;
 * - soft (Transient, Undetermined) bounce → the reason noted on the email; no status change,
 *   no unsubscribe (the address may work tomorrow; it does not count toward auto-disable);
 * - complaint → COMPLAINED, the contact unsubscribed, the address suppressed, the reputation checked.
 * Statuses never move backwards (recordMilestone). A repeated notification (SNS delivers at
 * least once) records nothing new, and unsubscribes or suppresses no one again.
 */
export async function applyDeliveryEvent(db: Kysely<Database>, event: DeliveryEvent, log: Logger): Promise<Outcome> {
  return db.transaction().execute(async (trx): Promise<Outcome> => {
    const email = await findEmailByMessageIds(trx, event.messageIds);
    if (!email) return 'unknown-email';
    if (event.kind === 'delivery') {
      const change = await recordMilestone(trx, { emailId: email.id, status: 'DELIVERED', data: event.data });
      return !change ? 'not-trackable' : change.first ? 'recorded' : 'duplicate';
    }
    if (event.kind === 'bounce' && !event.permanent) {
      const reason = [event.data.bounceType, event.data.bounceSubType, event.data.diagnosticCode].filter((v) => typeof v === 'string').join(': ');
      await noteSoftBounce(trx, email.id, `Soft bounce: ${reason}`);
      return 'soft-bounce';
    }
    const status = event.kind === 'bounce' ? 'BOUNCED' : 'COMPLAINED';
    const change = await recordMilestone(trx, { emailId: email.id, status, data: event.data });
    if (!change) return 'not-trackable';
    if (!change.first) return 'duplicate';
    if (change.contactId) await unsubscribeContact(trx, change.projectId, change.contactId);
    // The address itself is never sent to again, transactional mail included (docs/suppressions.md).
    await addSuppressions(trx, [
      { projectId: email.project_id, email: email.to_email, reason: status === 'BOUNCED' ? 'HARD_BOUNCE' : 'COMPLAINT', detail: detailOf(event.data), sourceEmailId: email.id },
    ]);
    const health = await disableProjectIfUnhealthy(trx, change.projectId, await countRecentSends(trx, change.projectId, REPUTATION.windowDays));
    if (health.disabled) {
      // A disabled project runs no workflow: its active executions are cancelled (a job, chunked).
      await enqueueProjectCancel(trx, change.projectId);
      const reason =
        health.bounced / health.sent >= REPUTATION.bounceRate
          ? `bounce rate ${percent(health.bounced, health.sent)} ≥ ${REPUTATION.bounceRate * 100}%`
          : `complaint rate ${percent(health.complained, health.sent)} ≥ ${REPUTATION.complaintRate * 100}%`;
      log.warn(
        { projectId: change.projectId, ...health, reason, windowDays: REPUTATION.windowDays },
        `project ${change.projectId} auto-disabled: ${reason} over ${health.sent} emails sent in ${REPUTATION.windowDays} days; re-enable with: npm run admin -- enable-project --project ${change.projectId}`,
      );
    }
    return 'recorded';
  });
}
