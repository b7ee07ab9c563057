import { sql, type Transaction } from 'kysely';
import type { ContactRow, Database, DataValue } from '../../db/schema.js';
import { type DataLimitBreach, dataLimitBreach, dataLimitError } from './data-rules.js';

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

/** A write refused because the contact's data after it would break a limit (nothing written). */
export interface RefusedContact {
  email: string;
  refused: DataLimitBreach;
}

export type UpsertOutcome = UpsertedContact | RefusedContact;

export const isRefused = (o: UpsertOutcome): o is RefusedContact => 'refused' in o;

type ResultRow = { email: string; breach: DataLimitBreach | null } & (
  | (ContactRow & { outcome: 'inserted' | 'updated' | 'unchanged' })
  | { outcome: 'refused' }
);

/**
 * Upserts many contacts in one statement and throws 422 ({@link dataLimitError}, nothing of
 * the caller's transaction should commit) when one of them would break a data limit. For
 * callers that write several requests at once: {@link upsertContactsChecked}.
 */
export async function upsertContacts(
  trx: Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
): Promise<UpsertedContact[]> {
  const outcomes = await upsertContactsChecked(trx, projectId, items);
  const refused = outcomes.find(isRefused);
  if (refused) throw dataLimitError(refused.refused);
  return outcomes as UpsertedContact[];
}

/**
 * Upserts many contacts in one statement: existing ones get the patch merged into their
 * data (`jsonb_strip_nulls(data || patch)`) and their subscription set when given (only
 * when something changes, so unchanged contacts keep updatedAt and make no dead rows);
 * missing ones are inserted. A subscription change records its event through the
 * contacts_subscription_change trigger, in this transaction. A contact whose data after
 * the merge would break a limit (DATA_LIMITS, checked in the statement: no query per row)
 * is left as it was and comes back refused. Results follow input order. With `withData: false`
 * the rows come back with `data: {}` (for callers that only need outcomes, such as imports:
 * parsing 1,000 contacts' data back is most of a batch's work on the event loop).
 */
export async function upsertContactsChecked(
  trx: Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
  opts: { withData?: boolean } = {},
): Promise<UpsertOutcome[]> {
  const results = new Map<string, UpsertOutcome>();
  let pending = items;
  // A contact inserted by a concurrent transaction after this statement's snapshot is
  // neither updated nor inserted (ON CONFLICT DO NOTHING), and one changed or deleted by a
  // concurrent transaction may not be updated as planned: the next round redoes them.
  for (let round = 0; pending.length > 0; round++) {
    if (round === 5) throw new Error('contact upsert did not settle after 5 rounds');
    const rows = await upsertRound(trx, projectId, pending, opts.withData ?? true);
    for (const r of rows) {
      if (r.outcome === 'refused') {
        results.set(r.email, { email: r.email, refused: r.breach ?? 'keys' });
        continue;
      }
      const { outcome, breach: _breach, ...row } = r;
      results.set(row.email, { row, isNew: outcome === 'inserted', changed: outcome !== 'unchanged' });
    }
    pending = pending.filter((i) => !results.has(i.email));
  }
  return items.map((i) => results.get(i.email) as UpsertOutcome);
}

async function upsertRound(trx: Transaction<Database>, projectId: string, items: readonly ContactUpsert[], withData: boolean): Promise<ResultRow[]> {
  const emails = items.map((i) => i.email);
  // One JSON array rather than a jsonb[] literal, whose per-element escaping costs a copy of every patch.
  const patches = JSON.stringify(items.map((i) => i.patch));
  const subscribed = items.map((i) => i.subscribed ?? null);
  const ifNew = items.map((i) => i.subscribedIfNew);
  const { rows } = await sql<ResultRow>`
    WITH input AS (
      SELECT * FROM ROWS FROM (unnest(${emails}::text[]), jsonb_array_elements(${patches}::jsonb),
                               unnest(${subscribed}::boolean[]), unnest(${ifNew}::boolean[]))
        AS t(email, patch, subscribed, subscribed_if_new)
    ),
    -- LATERAL: one (project_id, email) index probe per input row, whatever the table's
    -- statistics say (a project filling up looks small to the planner until ANALYZE).
    -- The merge is computed once, with its verdict against the limits (NULL: within them).
    existing AS (
      SELECT c.*, i.patch AS in_patch, i.subscribed AS in_subscribed,
             m.merged, m.merged IS DISTINCT FROM c.data AS data_changed,
             ${dataLimitBreach(sql.ref('c.data'), sql.ref('m.merged'))} AS breach
      FROM input i CROSS JOIN LATERAL (
        SELECT c.*, c.ctid AS row_version FROM contacts c WHERE c.project_id = ${projectId} AND c.email = i.email
      ) c CROSS JOIN LATERAL (SELECT jsonb_strip_nulls(c.data || i.patch) AS merged OFFSET 0) m
    ),
    -- A row still at the snapshot's version (same ctid) takes the merge and verdict computed
    -- above; one a concurrent write changed since (the UPDATE sees its newest version) is
    -- merged and checked again from that version, so no write is lost and the limits hold.
    updated AS (
      UPDATE contacts c
      SET data = CASE WHEN c.ctid = e.row_version THEN e.merged ELSE jsonb_strip_nulls(c.data || e.in_patch) END,
          subscribed = coalesce(e.in_subscribed, c.subscribed),
          updated_at = now()
      FROM existing e
      WHERE c.project_id = ${projectId} AND c.email = e.email AND e.breach IS NULL
        AND (CASE WHEN c.ctid = e.row_version THEN e.data_changed
                  ELSE c.data IS DISTINCT FROM jsonb_strip_nulls(c.data || e.in_patch) END
             OR c.subscribed IS DISTINCT FROM coalesce(e.in_subscribed, c.subscribed))
        AND (c.ctid = e.row_version OR ${dataLimitBreach(sql.ref('c.data'), sql`jsonb_strip_nulls(c.data || e.in_patch)`)} IS NULL)
      RETURNING c.*
    ),
    fresh AS (
      SELECT i.*, ${dataLimitBreach(sql`'{}'::jsonb`, sql`jsonb_strip_nulls(i.patch)`)} AS breach
      FROM input i
      WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.email = i.email)
    ),
    inserted AS (
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${projectId}, f.email, coalesce(f.subscribed, f.subscribed_if_new), jsonb_strip_nulls(f.patch)
      FROM fresh f WHERE f.breach IS NULL
      ON CONFLICT (project_id, email) DO NOTHING
      RETURNING *
    )
    SELECT r.id, r.project_id, r.email, r.subscribed, ${withData ? sql`r.data` : sql`'{}'::jsonb AS data`},
           r.created_at, r.updated_at, r.breach, r.outcome
    FROM (
      SELECT u.*, NULL AS breach, 'updated' AS outcome FROM updated u
      UNION ALL
      SELECT e.id, e.project_id, e.email, e.subscribed, e.data, e.created_at, e.updated_at, e.breach,
             CASE WHEN e.breach IS NULL THEN 'unchanged' ELSE 'refused' END
      FROM existing e WHERE NOT EXISTS (SELECT 1 FROM updated u WHERE u.id = e.id)
        -- Left out (so the next round redoes it with a fresh snapshot): a row that had to change
        -- but was not updated, because a concurrent write changed or deleted it meanwhile.
        AND NOT (e.breach IS NULL AND (e.data_changed OR e.subscribed IS DISTINCT FROM coalesce(e.in_subscribed, e.subscribed)))
      UNION ALL
      SELECT n.*, NULL, 'inserted' FROM inserted n
      UNION ALL
      SELECT NULL, NULL, f.email, NULL, NULL, NULL, NULL, f.breach, 'refused' FROM fresh f WHERE f.breach IS NOT NULL
    ) r`.execute(trx);
  return rows;
}
