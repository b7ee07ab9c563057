import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

export type BulkAction = 'subscribe' | 'unsubscribe' | 'delete';

/** What a bulk statement did. */
export interface BulkOutcome {
  /** Indexes (from 0) of input ids that are not contacts of the project. */
  missing: number[];
  /** Contacts whose subscription changed, or that were deleted. */
  changed: number;
}

/**
 * Applies one action to the contacts of `projectId` among `contactIds` in ONE statement; ids of
 * other projects are never touched. A subscription change records its event through the
 * contacts_subscription_change trigger; a delete removes the contact's events (ON DELETE CASCADE).
 */
export async function applyBulkAction(
  trx: Transaction<Database>,
  input: { projectId: string; action: BulkAction; contactIds: readonly string[] },
): Promise<BulkOutcome> {
  const change =
    input.action === 'delete'
      ? sql`DELETE FROM contacts c USING target t WHERE c.id = t.id RETURNING c.id`
      : sql`UPDATE contacts c SET subscribed = ${input.action === 'subscribe'}, updated_at = now()
            FROM target t WHERE c.id = t.id AND c.subscribed <> ${input.action === 'subscribe'} RETURNING c.id`;
  const { rows } = await sql<{ missing: number[]; changed: number }>`
    WITH input AS (
      SELECT t.id, t.ord FROM unnest(${input.contactIds}::uuid[]) WITH ORDINALITY AS t(id, ord)
    ),
    target AS (
      SELECT DISTINCT c.id FROM contacts c JOIN input i ON i.id = c.id WHERE c.project_id = ${input.projectId}
    ),
    changed AS (${change})
    SELECT
      coalesce((SELECT array_agg((i.ord - 1)::int ORDER BY i.ord) FROM input i WHERE NOT EXISTS (SELECT 1 FROM target t WHERE t.id = i.id)), '{}') AS missing,
      (SELECT count(*) FROM changed)::int AS changed`.execute(trx);
  const row = rows[0];
  return { missing: (row?.missing ?? []).map(Number), changed: row?.changed ?? 0 };
}
