import { sql, type Transaction } from 'kysely';
import type { ContactRow, Database, DataValue } from '../../db/schema.js';

/** One contact write by email (track, send, POST /contacts, imports). */
export interface ContactUpsert {
  /** Already normalised (see normalizeEmail). Distinct within one call. */
  email: string;
  /** Data patch: a value sets the key, null deletes it (see resolveData). */
  patch: Record<string, DataValue | null>;
  /** Explicit subscription; undefined keeps an existing contact's state. */
  subscribed?: boolean;
  /** Subscription of a contact created by this write when `subscribed` is undefined. */
  subscribedIfNew: boolean;
}

export interface UpsertedContact {
  row: ContactRow;
  isNew: boolean;
  /** False when an existing contact was left exactly as it was. */
  changed: boolean;
}

interface ResultRow extends ContactRow {
  outcome: 'inserted' | 'updated' | 'unchanged';
}

/**
 * Upserts many contacts in one statement: existing ones get the patch merged into their
 * data (`jsonb_strip_nulls(data || patch)`) and their subscription set when given (only
 * when something changes, so unchanged contacts keep updatedAt and make no dead rows);
 * missing ones are inserted. A subscription change records its event through the
 * contacts_subscription_change trigger, in this transaction. Results follow input order.
 */
export async function upsertContacts(
  trx: Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
): Promise<UpsertedContact[]> {
  const results = new Map<string, UpsertedContact>();
  let pending = items;
  // A contact inserted by a concurrent transaction after this statement's snapshot is
  // neither updated nor inserted (ON CONFLICT DO NOTHING); the next round updates it.
  for (let round = 0; pending.length > 0; round++) {
    if (round === 5) throw new Error('contact upsert did not settle after 5 rounds');
    const rows = await upsertRound(trx, projectId, pending);
    for (const r of rows) {
      const { outcome, ...row } = r;
      results.set(row.email, { row, isNew: outcome === 'inserted', changed: outcome !== 'unchanged' });
    }
    pending = pending.filter((i) => !results.has(i.email));
  }
  return items.map((i) => results.get(i.email) as UpsertedContact);
}

async function upsertRound(trx: Transaction<Database>, projectId: string, items: readonly ContactUpsert[]): Promise<ResultRow[]> {
  const emails = items.map((i) => i.email);
  const patches = items.map((i) => JSON.stringify(i.patch));
  const subscribed = items.map((i) => i.subscribed ?? null);
  const ifNew = items.map((i) => i.subscribedIfNew);
  const { rows } = await sql<ResultRow>`
    WITH input AS (
      SELECT * FROM unnest(${emails}::text[], ${patches}::jsonb[], ${subscribed}::boolean[], ${ifNew}::boolean[])
        AS t(email, patch, subscribed, subscribed_if_new)
    ),
    -- LATERAL: one (project_id, email) index probe per input row, whatever the table's
    -- statistics say (a project filling up looks small to the planner until ANALYZE).
    existing AS (
      SELECT c.*, i.patch AS in_patch, i.subscribed AS in_subscribed
      FROM input i CROSS JOIN LATERAL (
        SELECT * FROM contacts c WHERE c.project_id = ${projectId} AND c.email = i.email
      ) c
    ),
    updated AS (
      UPDATE contacts c
      SET data = jsonb_strip_nulls(c.data || e.in_patch),
          subscribed = coalesce(e.in_subscribed, c.subscribed),
          updated_at = now()
      FROM existing e
      WHERE c.project_id = ${projectId} AND c.email = e.email
        AND (c.data IS DISTINCT FROM jsonb_strip_nulls(c.data || e.in_patch)
             OR c.subscribed IS DISTINCT FROM coalesce(e.in_subscribed, c.subscribed))
      RETURNING c.*
    ),
    inserted AS (
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${projectId}, i.email, coalesce(i.subscribed, i.subscribed_if_new), jsonb_strip_nulls(i.patch)
      FROM input i
      WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.email = i.email)
      ON CONFLICT (project_id, email) DO NOTHING
      RETURNING *
    )
    SELECT u.*, 'updated' AS outcome FROM updated u
    UNION ALL
    SELECT e.id, e.project_id, e.email, e.subscribed, e.data, e.created_at, e.updated_at, 'unchanged'
    FROM existing e WHERE NOT EXISTS (SELECT 1 FROM updated u WHERE u.id = e.id)
    UNION ALL
    SELECT n.*, 'inserted' FROM inserted n`.execute(trx);
  return rows;
}
