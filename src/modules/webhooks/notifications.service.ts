import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { findEmailByMessageIds, noteSoftBounce, recordMilestone } from '../emails/index.js';
import { checkProjectReputation } from '../security/index.js';
import { addSuppressions } from '../suppressions/index.js';
import { unsubscribeContact } from './notifications.repo.js';
import type { DeliveryEvent } from './ses.js';

/** The logging this service needs (pino's shape). */
export interface Logger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export type Outcome = 'unknown-email' | 'recorded' | 'duplicate' | 'soft-bounce' | 'not-trackable';

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
 * The reputation check (src/modules/security, docs/security.md) may suspend the project.
 * Statuses never move backwards (recordMilestone). A repeated notification (SNS delivers at
 * least once) records nothing new, and unsubscribes or suppresses no one again.
 */
export async function applyDeliveryEvent(
  db: Kysely<Database>,
  event: DeliveryEvent,
  log: Logger,
  opts: { autoDisable: boolean },
): Promise<Outcome> {
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
    const check = await checkProjectReputation(trx, change.projectId, opts);
    if (check?.disabledReason) {
      log.warn(
        { projectId: change.projectId, reason: check.disabledReason, critical: check.assessment.critical },
        `project ${change.projectId} auto-disabled: ${check.disabledReason}; lift with: npm run admin -- enable-project --project ${change.projectId}`,
      );
    } else if (!opts.autoDisable && check?.assessment.level === 'critical') {
      log.warn({ projectId: change.projectId, critical: check.assessment.critical }, `project ${change.projectId} is at a critical deliverability level (AUTO_DISABLE_PROJECTS=false)`);
    }
    return 'recorded';
  });
}
