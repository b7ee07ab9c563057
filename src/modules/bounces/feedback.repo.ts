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

export interface SoftBounceStreak {
  /** Distinct emails to the address that soft-bounced since its last sign of life (within the window). */
  emails: number;
  first: Date | null;
  last: Date | null;
}

/**
 * Records one soft bounce of an email and answers its address's soft-bounce streak with it, in
 * one statement; undefined when this report was already counted (a replay: nothing recorded).
 * The streak: soft bounces within `windowDays`, after the last sign of life of the address (a
 * delivery notification, an open or a click of an email to it, read through the contact's emails:
 * emails_contact_idx). Several reports about one email count once. (The statement's scan of
 * soft_bounces does not see its own insert, which is added from RETURNING.)
 */
export async function countSoftBounce(
  trx: Transaction<Database>,
  q: { projectId: string; address: string; emailId: string; contactId: string | null; reportKey: string; detail: string | null; windowDays: number },
): Promise<SoftBounceStreak | undefined> {
  const address = q.address.toLowerCase();
  const since = sql`now() - make_interval(days => ${q.windowDays})`;
  const alive =
    q.contactId === null
      ? sql`NULL::timestamptz`
      : sql`(SELECT max(greatest(e.delivered_at, e.opened_at, e.clicked_at)) FROM emails e
             WHERE e.contact_id = ${q.contactId} AND e.created_at > ${since} - interval '1 day'
               AND e.project_id = ${q.projectId} AND lower(e.to_email) = ${address})`;
  const { rows } = await sql<{ inserted: number; emails: number; first: Date | null; last: Date | null }>`
    WITH ins AS (
      INSERT INTO soft_bounces (project_id, address, email_id, report_key, detail)
      VALUES (${q.projectId}, ${address}, ${q.emailId}, ${q.reportKey.slice(0, 200)}, ${q.detail})
      ON CONFLICT (email_id, report_key, project_id) DO NOTHING
      RETURNING email_id, bounced_at
    )
    SELECT (SELECT count(*) FROM ins)::int AS inserted,
           count(DISTINCT s.email_id)::int AS emails, min(s.bounced_at) AS first, max(s.bounced_at) AS last
    FROM (
      SELECT email_id, bounced_at FROM soft_bounces WHERE project_id = ${q.projectId} AND address = ${address}
      UNION ALL
      SELECT email_id, bounced_at FROM ins
    ) s
    WHERE s.bounced_at > ${since}
      AND s.bounced_at > coalesce(${alive}, '-infinity'::timestamptz)`.execute(trx);
  const row = rows[0];
  if (!row || row.inserted === 0) return undefined;
  return { emails: row.emails, first: row.first, last: row.last };
}
