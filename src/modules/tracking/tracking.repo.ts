import { type Kysely, sql } from 'kysely';
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
