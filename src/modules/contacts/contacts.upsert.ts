import { type Kysely, type RawBuilder, sql, type Transaction } from 'kysely';
import type { ContactRow, Database, DataValue } from '../../db/schema.js';
import { type DataLimitBreach, dataLimitBreach, dataLimitError } from './data-rules.js';

/**
 * The contact columns the statements below return, named: `RETURNING *` would grow with a column
 * a newer version adds (expand-then-contract, docs/operations.md "Upgrades"), and the UNION of
 * the answer would then fail in the older version still serving.
 */
const CONTACT_COLUMNS = (table: string) =>
  sql.join(['id', 'project_id', 'email', 'subscribed', 'data', 'created_at', 'updated_at'].map((c) => sql.ref(`${table}.${c}`)));

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
  /** What the `attach` statement answered for this contact's email (see {@link AttachedWrite}). */
  attached?: unknown;
}

/**
 * A write made in the same statement as the upsert, for the contacts it settled (inserted,
 * updated or left unchanged; never a refused one, nor one left to the next round): one round trip
 * and one commit for both, each contact's write and its own atomic together (/v1/track: the event
 * of each call). `ctes` is SQL for more WITH items (each starting with a comma) that may read
 * `settled (email, id)`; `result` names the one of them with one `(email, result)` row per email
 * whose `result` comes back as `attached`.
 */
export interface AttachedWrite {
  ctes: RawBuilder<unknown>;
  result: string;
}

/** A write refused because the contact's data after it would break a limit (nothing written). */
export interface RefusedContact {
  email: string;
  refused: DataLimitBreach;
}

export type UpsertOutcome = UpsertedContact | RefusedContact;

export const isRefused = (o: UpsertOutcome): o is RefusedContact => 'refused' in o;

type ResultRow = { email: string; breach: DataLimitBreach | null; attached?: unknown } & (
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
  trx: Kysely<Database> | Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
  opts: { withData?: boolean } = {},
): Promise<UpsertOutcome[]> {
  const results = new Map<string, UpsertOutcome>();
  let pending = items;
  // A contact inserted by a concurrent transaction after this statement's snapshot is
  // neither updated nor inserted (ON CONFLICT DO NOTHING), and one changed or deleted by a
  // concurrent transaction is not updated: the next round redoes them, locking the contacts
  // it reads (only then: a lock writes to every row read, changed or not) so it settles.
  for (let round = 0; pending.length > 0; round++) {
    if (round === 5) throw new Error('contact upsert did not settle after 5 rounds');
    const rows = await upsertRound(trx, projectId, pending, { withData: opts.withData ?? true, lock: round > 0 });
    collect(rows, results);
    pending = pending.filter((i) => !results.has(i.email));
  }
  return items.map((i) => results.get(i.email) as UpsertOutcome);
}

/**
 * The first round of {@link upsertContactsChecked} alone, as ONE statement that also makes the
 * `attach` write for the contacts it settled (outside any transaction, it commits both at once).
 * A contact a concurrent write changed or inserted meanwhile is not settled: it is absent from
 * the answer (the caller settles it with `upsertContactsChecked`, in a transaction of its own).
 */
export async function upsertContactsOnce(
  db: Kysely<Database> | Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
  attach: AttachedWrite,
): Promise<Map<string, UpsertOutcome>> {
  const results = new Map<string, UpsertOutcome>();
  collect(await upsertRound(db, projectId, items, { withData: true, lock: false, attach }), results);
  return results;
}

function collect(rows: readonly ResultRow[], results: Map<string, UpsertOutcome>): void {
  for (const r of rows) {
    if (r.outcome === 'refused') {
      results.set(r.email, { email: r.email, refused: r.breach ?? 'keys' });
      continue;
    }
    const { outcome, breach: _breach, attached, ...row } = r;
    results.set(row.email, { row, isNew: outcome === 'inserted', changed: outcome !== 'unchanged', ...(attached !== undefined && { attached }) });
  }
}

async function upsertRound(
  trx: Kysely<Database> | Transaction<Database>,
  projectId: string,
  items: readonly ContactUpsert[],
  opts: { withData: boolean; lock: boolean; attach?: AttachedWrite },
): Promise<ResultRow[]> {
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
    -- Every input row with its contact, if any (LATERAL with OFFSET 0, which keeps the planner
    -- from turning it into a join: one (project_id, email) index probe per row, whatever the
    -- table's statistics say; a project filling up looks small to the planner until ANALYZE, and
    -- the join it would pick hashes all of the project's contacts on every batch), the merge
    -- computed once, whether it changes the contact, and its verdict against the data limits
    -- (NULL: within them).
    checked AS (
      SELECT i.email, i.subscribed AS in_subscribed, i.subscribed_if_new,
             c.id, c.project_id, c.subscribed, c.data, c.created_at, c.updated_at, c.row_version, m.merged,
             (m.merged IS DISTINCT FROM c.data OR c.subscribed IS DISTINCT FROM coalesce(i.subscribed, c.subscribed)) AS changes,
             ${dataLimitBreach(sql`coalesce(c.data, '{}'::jsonb)`, sql.ref('m.merged'))} AS breach
      FROM input i
      LEFT JOIN LATERAL (
        SELECT c.*, c.ctid AS row_version FROM contacts c WHERE c.project_id = ${projectId} AND c.email = i.email
        OFFSET 0 ${opts.lock ? sql`FOR UPDATE` : sql``}
      ) c ON true
      CROSS JOIN LATERAL (SELECT jsonb_strip_nulls(coalesce(c.data, '{}'::jsonb) || i.patch) AS merged OFFSET 0) m
    ),
    -- Only a row still at the version read above (same ctid) is updated: one a concurrent write
    -- changed since is left to the next round, which merges and checks it again from a fresh
    -- snapshot, so no write is lost and the limits hold whatever the interleaving.
    updated AS (
      UPDATE contacts c
      SET data = k.merged, subscribed = coalesce(k.in_subscribed, c.subscribed), updated_at = now()
      FROM checked k
      WHERE c.project_id = ${projectId} AND c.email = k.email AND c.ctid = k.row_version
        AND k.id IS NOT NULL AND k.changes AND k.breach IS NULL
      RETURNING ${CONTACT_COLUMNS('c')}
    ),
    inserted AS (
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT ${projectId}, k.email, coalesce(k.in_subscribed, k.subscribed_if_new), k.merged
      FROM checked k WHERE k.id IS NULL AND k.breach IS NULL
      ON CONFLICT (project_id, email) DO NOTHING
      RETURNING ${CONTACT_COLUMNS('contacts')}
    )
    ${opts.attach ? sql`, settled AS (
      SELECT u.email, u.id FROM updated u
      UNION ALL SELECT n.email, n.id FROM inserted n
      UNION ALL SELECT k.email, k.id FROM checked k WHERE k.breach IS NULL AND k.id IS NOT NULL AND NOT k.changes
    ) ${opts.attach.ctes}` : sql``}
    SELECT r.id, r.project_id, r.email, r.subscribed, ${opts.withData ? sql`r.data` : sql`'{}'::jsonb AS data`},
           r.created_at, r.updated_at, r.breach, r.outcome
           ${opts.attach ? sql`, (SELECT a.result FROM ${sql.table(opts.attach.result)} a WHERE a.email = r.email) AS attached` : sql``}
    FROM (
      SELECT u.*, NULL AS breach, 'updated' AS outcome FROM updated u
      UNION ALL
      SELECT n.*, NULL, 'inserted' FROM inserted n
      UNION ALL
      -- Not written: refused, unchanged, or (left out, so the next round redoes it) a contact
      -- that had to change but was not updated, or a new one a concurrent transaction inserted.
      SELECT k.id, k.project_id, k.email, k.subscribed, k.data, k.created_at, k.updated_at, k.breach,
             CASE WHEN k.breach IS NULL THEN 'unchanged' ELSE 'refused' END
      FROM checked k
      WHERE k.breach IS NOT NULL OR (k.id IS NOT NULL AND NOT k.changes)
    ) r`.execute(trx);
  return rows;
}
