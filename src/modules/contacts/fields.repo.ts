import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, DataValue } from '../../db/schema.js';
import { variableUsePattern } from '../../mail/render.js';

type Db = Kysely<Database> | Transaction<Database>;

/** ISO 8601 calendar date, optionally with a time and an offset (what "date" fields hold). */
const ISO_DATE_RE = String.raw`^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$`;

/** Contacts of a project having one data key with one JSON type. */
export interface KeyTypeCount {
  key: string;
  /** jsonb_typeof: string, number, boolean (others do not occur under the data rules). */
  type: string;
  count: number;
  /** Of the strings, those that read as ISO 8601 dates. */
  dates: number;
}

/** Key statistics of GET /contacts/fields, exact or from a sample. */
export interface DataKeyStats {
  /** The project's contacts (always exact). */
  totalContacts: number;
  /** Contacts whose data was read: all of them, or the sample. */
  scanned: number;
  /** Distinct keys among the scanned contacts. */
  totalKeys: number;
  /** Counts among the scanned contacts, for the `limit` keys most of them have. */
  keys: KeyTypeCount[];
}

/**
 * CTEs over the preceding CTE `scanned (data)`: its data keys grouped by key and value type, for the
 * `limit` keys most rows have (then by key, byte order), and the number of distinct keys. The
 * aggregation stays in PostgreSQL: the service only ever receives `limit` keys, however many
 * distinct keys the contacts hold.
 */
const keyStats = (limit: number) => sql`
    kv AS (SELECT e.key, jsonb_typeof(e.value) AS type, e.value FROM scanned s CROSS JOIN LATERAL jsonb_each(s.data) AS e),
    stats AS (
      SELECT key, type, count(*)::int AS count,
             (count(*) FILTER (WHERE type = 'string' AND value #>> '{}' ~ ${ISO_DATE_RE}))::int AS dates
      FROM kv GROUP BY key, type
    ),
    per_key AS (SELECT key, sum(count) AS count FROM stats GROUP BY key),
    top AS (SELECT key FROM per_key ORDER BY count DESC, key COLLATE "C" LIMIT ${limit})`;
const keyStatsColumns = sql`
    (SELECT count(*) FROM per_key)::int AS total_keys,
    coalesce((SELECT jsonb_agg(s) FROM stats s WHERE s.key IN (SELECT key FROM top)), '[]') AS keys`;
type KeyStatsRow = { total: number; scanned: number; total_keys: number; keys: KeyTypeCount[] };
const toStats = (row: Partial<KeyStatsRow> | undefined): DataKeyStats => ({
  totalContacts: row?.total ?? 0,
  scanned: row?.scanned ?? 0,
  totalKeys: row?.total_keys ?? 0,
  keys: row?.keys ?? [],
});

/** The project's contacts, counted up to `max` + 1 at most (an index-only scan of that many entries). */
export async function countContactsUpTo(db: Db, projectId: string, max: number): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM contacts WHERE project_id = ${projectId} LIMIT ${max + 1}) AS c`.execute(db);
  return rows[0]?.n ?? 0;
}

/** One pass over every contact of the project: exact key statistics. */
export async function countDataKeys(db: Db, projectId: string, limit: number): Promise<DataKeyStats> {
  const { rows } = await sql<KeyStatsRow>`
    WITH scanned AS (SELECT data FROM contacts WHERE project_id = ${projectId}),
    ${keyStats(limit)}
    SELECT (SELECT count(*) FROM contacts WHERE project_id = ${projectId})::int AS total, ${keyStatsColumns}`.execute(db);
  return toStats({ ...rows[0], scanned: rows[0]?.total ?? 0 });
}

/**
 * Key statistics of a uniform random sample of about `sample` contacts of the project, plus its
 * exact contact count, in one pass over the project's rows: the pass counts them and keeps the row
 * addresses (ctid, 6 bytes each) of those whose id hash falls under the rate `sample / expected`
 * (the hash of a uuid is uniform and independent of the contact's data); only those rows' data is
 * then read (a TID scan: the addresses are of this statement's snapshot) and aggregated. Memory is
 * the addresses, never the data. `expected`: the project's contacts as last seen, or the table's
 * row estimate (at least `atLeast`) when unknown (too large a guess gives a smaller sample). The same contacts are
 * picked on every call while the project does not change, so answers are stable.
 */
export async function sampleDataKeys(
  db: Db,
  projectId: string,
  input: { sample: number; limit: number; expected?: number; /** Lower bound of the guess when `expected` is unknown. */ atLeast?: number },
): Promise<DataKeyStats> {
  const expected = input.expected
    ? sql`${input.expected}::float8`
    : sql`(SELECT greatest(reltuples, ${input.atLeast ?? 1})::float8 FROM pg_class WHERE oid = 'contacts'::regclass)`;
  // uuid_hash is an int4: kept when below -2^31 + rate × 2^32.
  const { rows } = await sql<KeyStatsRow>`
    WITH counted AS (
      SELECT count(*)::int AS total,
             coalesce(array_agg(ctid) FILTER (WHERE uuid_hash(id) < (-2147483648 + least(1, ${input.sample}::float8 / ${expected}) * 4294967296)::int8), '{}') AS picked
      FROM contacts WHERE project_id = ${projectId}
    ),
    scanned AS (SELECT c.data FROM contacts c WHERE c.ctid = ANY ((SELECT picked FROM counted)::tid[])),
    ${keyStats(input.limit)}
    SELECT (SELECT total FROM counted) AS total, (SELECT cardinality(picked) FROM counted) AS scanned, ${keyStatsColumns}`.execute(db);
  return toStats(rows[0]);
}

/** Distinct values of one data key with their counts, most frequent first (then by value). */
export async function listKeyValues(
  db: Db,
  input: { projectId: string; key: string; limit: number; offset: number },
): Promise<{ total: number; values: { value: DataValue; count: number }[] }> {
  const { rows } = await sql<{ total: number; items: { value: DataValue; count: number }[] }>`
    WITH grouped AS (
      SELECT data -> ${input.key} AS value, count(*)::int AS count
      FROM contacts WHERE project_id = ${input.projectId} AND data ? ${input.key}
      GROUP BY 1
    ),
    page AS (
      SELECT value, count FROM grouped ORDER BY count DESC, value LIMIT ${input.limit} OFFSET ${input.offset}
    )
    SELECT (SELECT count(*) FROM grouped)::int AS total,
           coalesce((SELECT jsonb_agg(jsonb_build_object('value', value, 'count', count) ORDER BY count DESC, value) FROM page), '[]') AS items`.execute(
    db,
  );
  return { total: rows[0]?.total ?? 0, values: rows[0]?.items ?? [] };
}

export async function countContactsWithKey(db: Db, projectId: string, key: string): Promise<number> {
  const { rows } = await sql<{ count: number }>`
    SELECT count(*)::int AS count FROM contacts WHERE project_id = ${projectId} AND data ? ${key}`.execute(db);
  return rows[0]?.count ?? 0;
}

/** Removes the key from every contact of the project having it, in one statement. */
export async function removeKeyFromContacts(trx: Transaction<Database>, projectId: string, key: string): Promise<number> {
  const result = await sql`
    UPDATE contacts SET data = data - ${key}, updated_at = now()
    WHERE project_id = ${projectId} AND data ? ${key}`.execute(trx);
  return Number(result.numAffectedRows ?? 0);
}

/** Where a batch stopped: the last contact scanned, in (created_at, id) order. */
export interface ContactCursor {
  /** created_at as PostgreSQL text: keeps the microseconds a JS Date would lose. */
  at: string;
  id: string;
}

/**
 * One batch of a field delete: scans the next `scan` contacts of the project after `after` in
 * (created_at, id) order (the contacts_project_created_idx keyset) and removes the key from those
 * having it. Linear over the whole project, whatever the share of contacts having the key.
 */
export async function removeKeyBatch(
  trx: Transaction<Database>,
  input: { projectId: string; key: string; after?: ContactCursor; scan: number },
): Promise<{ updated: number; scanned: number; last?: ContactCursor }> {
  const after = input.after ? sql`AND (created_at, id) > (${input.after.at}::timestamptz, ${input.after.id}::uuid)` : sql``;
  const { rows } = await sql<{ updated: number; scanned: number; last_at: string | null; last_id: string | null }>`
    WITH scan AS (
      SELECT id, created_at FROM contacts
      WHERE project_id = ${input.projectId} ${after}
      ORDER BY created_at, id LIMIT ${input.scan}
    ),
    updated AS (
      UPDATE contacts c SET data = c.data - ${input.key}, updated_at = now()
      FROM scan s WHERE c.id = s.id AND c.data ? ${input.key}
      RETURNING c.id
    ),
    last AS (SELECT created_at::text AS at, id FROM scan ORDER BY created_at DESC, id DESC LIMIT 1)
    SELECT (SELECT count(*) FROM updated)::int AS updated, (SELECT count(*) FROM scan)::int AS scanned,
           (SELECT at FROM last) AS last_at, (SELECT id FROM last) AS last_id`.execute(trx);
  const row = rows[0];
  const last = row?.last_at && row.last_id ? { at: row.last_at, id: row.last_id } : undefined;
  return { updated: row?.updated ?? 0, scanned: row?.scanned ?? 0, last };
}

/** Templates of the project whose subject or body reference `{{key}}` (any tag form). */
export async function findTemplatesUsingVariable(db: Db, projectId: string, key: string): Promise<{ id: string; name: string }[]> {
  const pattern = variableUsePattern(key);
  return db
    .selectFrom('templates')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .where((eb) => eb.or([eb('subject', '~', pattern), eb('body', '~', pattern)]))
    .orderBy('created_at')
    .execute();
}
