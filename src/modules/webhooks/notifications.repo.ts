import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

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
