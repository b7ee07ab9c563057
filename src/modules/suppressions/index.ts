/**
 * The suppressions module's facade: what other modules call. Every send path asks it, with
 * one query per batch or a join in its own batch SQL, never a query per recipient:
 * /v1/send and campaign test sends ({@link findSuppressionNotes}), the campaign fan-out
 * ({@link suppressionJoinSql} + {@link suppressionNoteSql}), delivery (the note joined into the
 * email's delivery query), and later workflow SEND_EMAIL steps (the same calls). The relay's
 * notifications add entries with {@link addSuppressions}.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { normalizeEmail } from '../contacts/index.js';
import { findSuppressionNotes, insertSuppressions, type NewSuppression } from './suppressions.repo.js';

export { findSuppressionNotes, suppressionJoinSql, suppressionNoteSql, type NewSuppression } from './suppressions.repo.js';

/**
 * Adds entries (set-based, in the caller's transaction); an address already listed keeps its
 * first entry. Addresses are lower-cased here. Answers the addresses added.
 */
export async function addSuppressions(db: Kysely<Database> | Transaction<Database>, entries: readonly NewSuppression[]): Promise<string[]> {
  return insertSuppressions(db, entries.map((e) => ({ ...e, email: normalizeEmail(e.email) })));
}

/** Whether one address is suppressed for the project, with the note its email would be CANCELLED with. */
export async function isSuppressed(db: Kysely<Database> | Transaction<Database>, projectId: string, email: string): Promise<string | undefined> {
  return (await findSuppressionNotes(db, projectId, [normalizeEmail(email)])).values().next().value;
}

export { suppressionsRoutes } from './suppressions.routes.js';
