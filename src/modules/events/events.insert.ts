import { sql, type Transaction } from 'kysely';
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
