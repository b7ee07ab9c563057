import { type Kysely, sql } from 'kysely';

/**
 * Indexes on `contacts.data` keys that a project's segments filter on (docs/conditions.md, "Data
 * key indexes"). Nothing here indexes a contact: the catalogue lists the partial indexes the
 * reconciler (src/modules/segments/data-indexes.ts) builds CONCURRENTLY for one project and one
 * key (`WHERE project_id = <project> AND data ? <key>`), so only that project's rows that have the
 * key carry entries, and every other tenant's writes pay one predicate test per index.
 *
 * - `contact_data_numeric(v)`: the number a data value is compared as: a JSON number, or a plain
 *   decimal string of at most 1,000 characters; anything else NULL, never a cast error. The
 *   condition compiler emits the same function (inlined by the planner), so a `value` index on it
 *   serves the comparison itself as its index condition, with no recheck. The length bound keeps
 *   every entry far under btree's ~2,700-byte limit (string values may have 10,000 characters; a
 *   10,000-digit numeric would fail the contact's write). JSON numbers reach the database through
 *   JavaScript, so they have at most ~310 digits.
 * - `contact_data_indexes`: one row per (project, key, kind): kind `value` is a btree on the
 *   data value as a number (exists, numeric comparisons), `text` a trigram GIN on the value as text (contains).
 *   `ready` once built and valid. Deleting a project drops its rows; the reconciler drops the
 *   indexes no row describes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE OR REPLACE FUNCTION contact_data_numeric(v jsonb) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
      SELECT CASE jsonb_typeof(v) WHEN 'number' THEN v::numeric
        WHEN 'string' THEN CASE WHEN length(v #>> '{}') <= 1000 AND (v #>> '{}') ~ '^\\s*[-+]?(\\d+\\.?\\d*|\\.\\d+)\\s*$'
          THEN (v #>> '{}')::numeric END END
    $$`.execute(db);
  await sql`
    CREATE TABLE contact_data_indexes (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      key text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('value', 'text')),
      ready boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      ready_at timestamptz,
      UNIQUE (project_id, key, kind)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE contact_data_indexes`.execute(db);
  await sql`DROP FUNCTION contact_data_numeric(jsonb)`.execute(db);
}
