import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

/** Who a subscription-page token speaks for: the contact, their project and its name. */
export interface SubscriberRow {
  project_id: string;
  project_name: string;
  contact_id: string;
  email: string;
  subscribed: boolean;
}

/** The ids a page token carries (DESIGN §1; see subscriptionUrls). */
export interface SubscriberRef {
  projectId: string;
  contactId: string;
  emailId: string | undefined;
}

/**
 * The contact of a token, only when the contact belongs to the token's project and the
 * token's email (if it still exists) was sent by that project to that contact. One query.
 */
export async function findSubscriber(db: Kysely<Database>, ref: SubscriberRef): Promise<SubscriberRow | undefined> {
  return db
    .selectFrom('contacts as c')
    .innerJoin('projects as p', 'p.id', 'c.project_id')
    .select(['c.project_id', 'p.name as project_name', 'c.id as contact_id', 'c.email', 'c.subscribed'])
    .where('c.id', '=', ref.contactId)
    .where('c.project_id', '=', ref.projectId)
    .$if(ref.emailId !== undefined, (q) =>
      q.where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('emails as e')
              .select('e.id')
              .where('e.id', '=', ref.emailId ?? '')
              .where(sql<boolean>`(e.project_id <> c.project_id OR e.contact_id IS DISTINCT FROM c.id)`),
          ),
        ),
      ),
    )
    .executeTakeFirst();
}

/**
 * Sets a contact's subscription; the contacts trigger records contact.subscribed or
 * contact.unsubscribed when the value changes (and only then).
 */
export async function updateSubscribed(
  db: Kysely<Database>,
  ref: { projectId: string; contactId: string },
  subscribed: boolean,
): Promise<boolean> {
  const result = await db
    .updateTable('contacts')
    .set({ subscribed, updated_at: sql`now()` })
    .where('id', '=', ref.contactId)
    .where('project_id', '=', ref.projectId)
    .where('subscribed', '<>', subscribed)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * One click of `url` in a project email (migration 0031's `campaign_link_click`), in the click's
 * transaction: the (email, URL) row counts every click; a campaign email's URL total grows by
 * one, and its unique clicks by one when this is the email's first click of that URL. SYSTEM
 * emails (no project) and unknown emails record nothing.
 */
export async function insertLinkClick(trx: Transaction<Database>, emailId: string, url: string): Promise<void> {
  await sql`SELECT campaign_link_click(${emailId}::uuid, ${url}::text)`.execute(trx);
}

/** A campaign's link: its URL, every click, the emails that clicked it. */
export interface CampaignLinkRow {
  url: string;
  clicks: number;
  unique_clicks: number;
}

/**
 * A campaign's most clicked URLs (by clicks, then unique clicks, then URL), summed over the
 * writer shards; reads `campaign_link_counts` only (its key leads on the campaign).
 */
export async function topCampaignLinks(db: Kysely<Database>, projectId: string, campaignId: string, limit: number): Promise<CampaignLinkRow[]> {
  const { rows } = await sql<CampaignLinkRow>`
    SELECT min(url) AS url, sum(clicks)::int AS clicks, sum(unique_clicks)::int AS unique_clicks
    FROM campaign_link_counts
    WHERE campaign_id = ${campaignId} AND project_id = ${projectId}
    GROUP BY url_key
    HAVING sum(clicks) > 0
    ORDER BY 2 DESC, 3 DESC, 1
    LIMIT ${limit}`.execute(db);
  return rows;
}
