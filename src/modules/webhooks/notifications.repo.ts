import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { SendingRecord } from '../emails/index.js';

/** Unsubscribes a contact; the contacts trigger records contact.unsubscribed when it changes. */
export async function unsubscribeContact(trx: Transaction<Database>, projectId: string, contactId: string): Promise<void> {
  await trx
    .updateTable('contacts')
    .set({ subscribed: false, updated_at: sql`now()` })
    .where('id', '=', contactId)
    .where('project_id', '=', projectId)
    .where('subscribed', '=', true)
    .execute();
}

/** Auto-disable thresholds (DESIGN §5). */
export const REPUTATION = {
  windowDays: 7,
  minSent: 100,
  bounceRate: 0.1,
  complaintRate: 0.0015,
} as const;

export interface ReputationCheck {
  sent: number;
  bounced: number;
  complained: number;
  /** True when this call disabled the project. */
  disabled: boolean;
}

/**
 * Given the project's recent sending record (the emails module's countRecentSends), and when
 * there are enough emails and a rate reaches its threshold, `projects.disabled = true`.
 */
export async function disableProjectIfUnhealthy(trx: Transaction<Database>, projectId: string, record: SendingRecord): Promise<ReputationCheck> {
  const { sent, bounced, complained } = record;
  const { rows } = await sql<{ id: string }>`
    UPDATE projects p SET disabled = true, disabled_at = now(), updated_at = now(),
      disabled_reason = CASE WHEN ${bounced}::int >= ${sent}::int * ${REPUTATION.bounceRate}::numeric
        THEN format('bounce rate %s of %s emails in %s days', ${bounced}::int, ${sent}::int, ${REPUTATION.windowDays}::int)
        ELSE format('complaint rate %s of %s emails in %s days', ${complained}::int, ${sent}::int, ${REPUTATION.windowDays}::int) END
    WHERE p.id = ${projectId} AND NOT p.disabled AND ${sent}::int >= ${REPUTATION.minSent}
      AND (${bounced}::int >= ${sent}::int * ${REPUTATION.bounceRate}::numeric OR ${complained}::int >= ${sent}::int * ${REPUTATION.complaintRate}::numeric)
    RETURNING p.id`.execute(trx);
  return { sent, bounced, complained, disabled: rows.length > 0 };
}
