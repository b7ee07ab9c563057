import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

/** The email one of these Message-IDs names (unique index on message_id), with its recipient (suppressions). */
export async function findEmailByMessageIds(
  trx: Transaction<Database>,
  messageIds: readonly string[],
): Promise<{ id: string; project_id: string; to_email: string } | undefined> {
  if (messageIds.length === 0) return undefined;
  return trx.selectFrom('emails').select(['id', 'project_id', 'to_email']).where('message_id', 'in', messageIds).limit(1).executeTakeFirst();
}

/** Keeps a soft bounce's reason on the email (its status is left alone: see docs/tracking.md). */
export async function noteSoftBounce(trx: Transaction<Database>, emailId: string, note: string): Promise<void> {
  await trx.updateTable('emails').set({ error: note, updated_at: sql`now()` }).where('id', '=', emailId).execute();
}

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
 * One statement: the project's emails sent in the last 7 days, how many of them bounced
 * (hard: soft bounces never set bounced_at) and how many drew a complaint, and, when there
 * are enough of them and a rate reaches its threshold, `projects.disabled = true`.
 * Milestone timestamps rather than status: an email that bounced and then drew a complaint
 * counts in both. `created_at` bounds the scan through the (project_id, created_at) index:
 * an email is created before it is sent, and none waits 30 days to go out.
 */
export async function disableProjectIfUnhealthy(trx: Transaction<Database>, projectId: string): Promise<ReputationCheck> {
  const { rows } = await sql<ReputationCheck>`
    WITH stats AS (
      SELECT count(*)::int AS sent,
             count(bounced_at)::int AS bounced,
             count(complained_at)::int AS complained
      FROM emails
      WHERE project_id = ${projectId}
        AND created_at >= now() - interval '30 days'
        AND sent_at >= now() - make_interval(days => ${REPUTATION.windowDays})
    ), disabled AS (
      UPDATE projects p SET disabled = true, disabled_at = now(), updated_at = now(),
        disabled_reason = CASE WHEN s.bounced >= s.sent * ${REPUTATION.bounceRate}::numeric
          THEN format('bounce rate %s of %s emails in %s days', s.bounced, s.sent, ${REPUTATION.windowDays}::int)
          ELSE format('complaint rate %s of %s emails in %s days', s.complained, s.sent, ${REPUTATION.windowDays}::int) END
      FROM stats s
      WHERE p.id = ${projectId} AND NOT p.disabled AND s.sent >= ${REPUTATION.minSent}
        AND (s.bounced >= s.sent * ${REPUTATION.bounceRate}::numeric OR s.complained >= s.sent * ${REPUTATION.complaintRate}::numeric)
      RETURNING p.id
    )
    SELECT s.sent, s.bounced, s.complained, EXISTS (SELECT 1 FROM disabled) AS disabled FROM stats s`.execute(trx);
  return rows[0] ?? { sent: 0, bounced: 0, complained: 0, disabled: false };
}
