import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

/** What a test send needs of a contact: its id, address and data. */
export interface TestContact {
  id: string;
  email: string;
  data: Record<string, unknown>;
}

/** A contact of the project by id (the "render as" contact of a test send). */
export async function findContactByIdForTest(db: Kysely<Database>, projectId: string, id: string): Promise<TestContact | undefined> {
  return db.selectFrom('contacts').select(['id', 'email', 'data']).where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
}

/** The project's contact of a (normalised) address, if there is one: a test send links its email row to it. */
export async function findContactByEmailForTest(db: Kysely<Database>, projectId: string, email: string): Promise<TestContact | undefined> {
  return db.selectFrom('contacts').select(['id', 'email', 'data']).where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
}
