import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * The SQL of the shared feedback path that is not the email rows' (those go through the emails
 * facade): unsubscribing the contact, and the soft-bounce counts (migration 0032). The module's
 * own tables are written with `sql` templates: their row types live here, not in db/schema.ts.
 */

/**
 * Unsubscribes contacts, each scoped to its project, in one statement (rows locked in id order);
 * the contacts trigger records contact.unsubscribed for each that changes. Repeats are harmless.
 */
export async function unsubscribeContacts(trx: Transaction<Database>, contacts: readonly { projectId: string; contactId: string }[]): Promise<void> {
  if (contacts.length === 0) return;
  await sql`
    WITH target AS (
      SELECT c.id FROM contacts c
      JOIN unnest(${contacts.map((c) => c.projectId)}::uuid[], ${contacts.map((c) => c.contactId)}::uuid[]) AS u(project_id, id)
        ON c.id = u.id AND c.project_id = u.project_id
      WHERE c.subscribed
      ORDER BY c.id
      FOR UPDATE OF c
    )
    UPDATE contacts c SET subscribed = false, updated_at = now()
    FROM (SELECT DISTINCT id FROM target) t
    WHERE c.id = t.id AND c.subscribed`.execute(trx);
}

/** Records one soft bounce of an email; false when this report was already counted (a replay). */
export async function insertSoftBounce(
  trx: Transaction<Database>,
  row: { projectId: string; address: string; emailId: string; reportKey: string; detail: string | null },
): Promise<boolean> {
  const { rows } = await sql<{ inserted: number }>`
    INSERT INTO soft_bounces (project_id, address, email_id, report_key, detail)
    VALUES (${row.projectId}, ${row.address.toLowerCase()}, ${row.emailId}, ${row.reportKey.slice(0, 200)}, ${row.detail})
    ON CONFLICT (email_id, report_key) DO NOTHING
    RETURNING 1 AS inserted`.execute(trx);
  return rows.length > 0;
}

export interface SoftBounceStreak {
  /** Distinct emails to the address that soft-bounced since its last sign of life (within the window). */
  emails: number;
  first: Date | null;
  last: Date | null;
}

/**
 * The address's current soft-bounce streak: soft bounces within `windowDays`, after the last sign
 * of life of the address (a delivery notification, an open or a click of an email to it, read
 * through the contact's emails: emails_contact_idx). Several reports about one email count once.
 */
export async function softBounceStreak(
  trx: Transaction<Database>,
  q: { projectId: string; address: string; contactId: string | null; windowDays: number },
): Promise<SoftBounceStreak> {
  const address = q.address.toLowerCase();
  const since = sql`now() - make_interval(days => ${q.windowDays})`;
  const alive =
    q.contactId === null
      ? sql`NULL::timestamptz`
      : sql`(SELECT max(greatest(e.delivered_at, e.opened_at, e.clicked_at)) FROM emails e
             WHERE e.contact_id = ${q.contactId} AND e.created_at > ${since} - interval '1 day'
               AND e.project_id = ${q.projectId} AND lower(e.to_email) = ${address})`;
  const { rows } = await sql<{ emails: number; first: Date | null; last: Date | null }>`
    SELECT count(DISTINCT s.email_id)::int AS emails, min(s.bounced_at) AS first, max(s.bounced_at) AS last
    FROM soft_bounces s
    WHERE s.project_id = ${q.projectId} AND s.address = ${address}
      AND s.bounced_at > ${since}
      AND s.bounced_at > coalesce(${alive}, '-infinity'::timestamptz)`.execute(trx);
  return rows[0] ?? { emails: 0, first: null, last: null };
}
