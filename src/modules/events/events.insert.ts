import { sql, type Transaction } from 'kysely';
import type { AttachedWrite } from '../contacts/index.js';
import type { Database } from '../../db/schema.js';

export interface NewEvent {
  contactId: string;
  name: string;
  data: Record<string, unknown>;
}

export interface InsertedEvent {
  id: string;
  createdAt: Date;
}

/** Inserts events of one project in one statement; results follow input order. */
export async function insertEvents(
  trx: Transaction<Database>,
  projectId: string,
  events: readonly NewEvent[],
): Promise<InsertedEvent[]> {
  if (events.length === 0) return [];
  const { rows } = await sql<{ id: string; created_at: Date }>`
    WITH input AS MATERIALIZED (
      SELECT uuid_generate_v7() AS id, t.*
      FROM unnest(${events.map((e) => e.contactId)}::uuid[], ${events.map((e) => e.name)}::text[],
                  ${events.map((e) => JSON.stringify(e.data))}::jsonb[]) WITH ORDINALITY AS t(contact_id, name, data, ord)
    ),
    inserted AS (
      INSERT INTO events (id, project_id, contact_id, name, data, created_at)
      SELECT id, ${projectId}, contact_id, name, data, now() FROM input
    )
    SELECT id, now() AS created_at FROM input ORDER BY ord`.execute(trx);
  return rows.map((r) => ({ id: r.id, createdAt: r.created_at }));
}

/** One event of a contact written by email (see {@link eventsOfSettledContacts}). */
export interface EventByEmail {
  email: string;
  name: string;
  data: Record<string, unknown>;
}

/** What {@link eventsOfSettledContacts} answers per email. */
export interface AttachedEvent {
  id: string;
  /** Milliseconds since the epoch of the event's created_at. */
  at: number;
}

/**
 * The events of a contact upsert's emails, inserted in the upsert's own statement
 * (`upsertContactsChecked`'s `attach`): an event for each contact it settled, none for a refused
 * one or one left to its next round. Answers `{id, at}` ({@link AttachedEvent}) per email.
 */
export function eventsOfSettledContacts(projectId: string, events: readonly EventByEmail[]): AttachedWrite {
  return {
    ctes: sql`, event_input AS MATERIALIZED (
        SELECT uuid_generate_v7() AS id, s.id AS contact_id, t.email, t.name, t.data
        FROM unnest(${events.map((e) => e.email)}::text[], ${events.map((e) => e.name)}::text[],
                    ${events.map((e) => JSON.stringify(e.data))}::jsonb[]) WITH ORDINALITY AS t(email, name, data, ord)
        JOIN settled s ON s.email = t.email
        ORDER BY t.ord
      ),
      event_insert AS (
        INSERT INTO events (id, project_id, contact_id, name, data, created_at)
        SELECT id, ${projectId}, contact_id, name, data, now() FROM event_input
      ),
      event_result AS (
        SELECT email, jsonb_build_object('id', id, 'at', floor(extract(epoch FROM now()) * 1000)::bigint) AS result FROM event_input
      )`,
    result: 'event_result',
  };
}
