import { type Kysely, sql } from 'kysely';
import { type DataIndexKind, storedDataIndexUses } from '../../conditions/index.js';
import type { Database } from '../../db/schema.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';

/**
 * Data key indexes (docs/conditions.md, "Data key indexes"; catalogue: contact_data_indexes,
 * migration 0036): partial indexes on the contacts of ONE project that have ONE data key, for
 * the keys that project's DYNAMIC segments filter on with exists, contains or a numeric
 * comparison. Built and dropped CONCURRENTLY by the `contacts-data-indexes` job, never in a
 * request; the condition compiler reads the catalogue (src/conditions/data-indexes.ts).
 */

/** A project with fewer contacts gets no index: scanning its rows costs a few ms (bench/segments.md). */
export const DATA_INDEX_MIN_CONTACTS = 50_000;
/** Indexes per project, the most used (key, kind) pairs first. */
export const MAX_DATA_INDEXES_PER_PROJECT = 8;
/** Indexes in all: each one costs every contacts write a predicate test and every contacts plan a look. */
export const MAX_DATA_INDEXES = 200;

const NAME_PREFIX = 'contacts_data_key_';
/** The index of catalogue row `id`. */
export const dataIndexName = (id: string | number) => `${NAME_PREFIX}${id}`;

interface Wanted {
  key: string;
  kind: DataIndexKind;
}

/** The (key, kind) pairs the project's DYNAMIC segments can use, most used first, at most MAX_DATA_INDEXES_PER_PROJECT. */
export async function wantedDataIndexes(db: Kysely<Database>, projectId: string): Promise<Wanted[]> {
  const rows = await db
    .selectFrom('segments')
    .select('condition')
    .where('project_id', '=', projectId)
    .where('type', '=', 'DYNAMIC')
    .where('condition', 'is not', null)
    .execute();
  const uses = new Map<string, Wanted & { n: number }>();
  for (const row of rows) {
    for (const use of storedDataIndexUses(row.condition)) {
      const id = `${use.kind}\u0000${use.key}`;
      const seen = uses.get(id);
      if (seen) seen.n++;
      else uses.set(id, { ...use, n: 1 });
    }
  }
  return [...uses.values()]
    .sort((a, b) => b.n - a.n || a.key.localeCompare(b.key) || a.kind.localeCompare(b.kind))
    .slice(0, MAX_DATA_INDEXES_PER_PROJECT)
    .map(({ key, kind }) => ({ key, kind }));
}

/** Whether a stored condition has a filter a data key index could serve (its segment's changes queue a reconcile). */
export function usesDataIndexes(condition: unknown): boolean {
  return storedDataIndexUses(condition).length > 0;
}

/** Queues the project's reconcile (a waiting one is replaced): after a segment is created, changed or deleted. */
export async function enqueueDataIndexes(db: Kysely<Database>, projectId: string): Promise<void> {
  await sql`
    SELECT graphile_worker.add_job(${Tasks.contactsDataIndexes}::text, json_build_object('projectId', ${projectId}::text),
      queue_name => ${Tasks.contactsDataIndexes}::text, job_key => ${`${Tasks.contactsDataIndexes}:${projectId}`}::text,
      priority => ${JobPriority.maintenance}::int)`.execute(db);
}

/** The DDL of catalogue row `id`, quoted by PostgreSQL (format %I/%L): keys are any text. */
async function createStatement(db: Kysely<Database>, row: { id: string; project_id: string; key: string; kind: DataIndexKind }): Promise<string> {
  const expression =
    row.kind === 'value' ? 'USING btree (contact_data_numeric(data -> %L::text))' : 'USING gin ((data ->> %L::text) gin_trgm_ops)';
  const { rows } = await sql<{ ddl: string }>`
    SELECT format(${`CREATE INDEX CONCURRENTLY %I ON contacts ${expression} WHERE project_id = %L::uuid AND data ? %L::text`},
      ${dataIndexName(row.id)}::text, ${row.key}::text, ${row.project_id}::text, ${row.key}::text) AS ddl`.execute(db);
  return rows[0]?.ddl ?? '';
}

async function dropIndex(db: Kysely<Database>, name: string): Promise<void> {
  const { rows } = await sql<{ ddl: string }>`SELECT format('DROP INDEX CONCURRENTLY IF EXISTS %I', ${name}::text) AS ddl`.execute(db);
  await sql.raw(rows[0]?.ddl ?? '').execute(db);
}

/** Runs `fn` holding the one lock of all data index DDL: two CREATE INDEX CONCURRENTLY on contacts could wait on each other. */
async function underDdlLock<T>(db: Kysely<Database>, fn: (conn: Kysely<Database>) => Promise<T>): Promise<T> {
  return db.connection().execute(async (conn) => {
    await sql`SELECT pg_advisory_lock(hashtextextended('contact-data-indexes', 0))`.execute(conn);
    try {
      return await fn(conn);
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtextextended('contact-data-indexes', 0))`.execute(conn);
    }
  });
}

export interface ReconcileResult {
  built: string[];
  dropped: string[];
}

/**
 * Makes the project's data key indexes those its segments want (none below
 * DATA_INDEX_MIN_CONTACTS contacts): drops the others, then builds the missing ones (catalogued
 * first, `ready` once valid; a build interrupted earlier leaves an invalid index of the same
 * name, and a catalogued index that is missing or invalid is dropped and rebuilt). Within
 * MAX_DATA_INDEXES over all projects.
 */
export async function reconcileDataIndexes(db: Kysely<Database>, projectId: string, minContacts = DATA_INDEX_MIN_CONTACTS): Promise<ReconcileResult> {
  return underDdlLock(db, async (conn) => {
    const result: ReconcileResult = { built: [], dropped: [] };
    const { rows: size } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM (SELECT 1 FROM contacts WHERE project_id = ${projectId}::uuid LIMIT ${minContacts}) s`.execute(conn);
    const wanted = (size[0]?.n ?? 0) >= minContacts ? await wantedDataIndexes(conn, projectId) : [];
    const isWanted = (r: { key: string; kind: string }) => wanted.some((w) => w.key === r.key && w.kind === r.kind);
    const { rows: existing } = await sql<{ id: string; project_id: string; key: string; kind: DataIndexKind; ready: boolean }>`
      SELECT id::text, project_id::text, key, kind, ready FROM contact_data_indexes WHERE project_id = ${projectId}::uuid ORDER BY id`.execute(conn);
    for (const row of existing.filter((r) => !isWanted(r))) {
      // Out of the catalogue first: the compiler stops using it before it goes.
      await sql`DELETE FROM contact_data_indexes WHERE id = ${row.id}::bigint`.execute(conn);
      await dropIndex(conn, dataIndexName(row.id));
      result.dropped.push(dataIndexName(row.id));
    }
    for (const w of wanted.filter((w) => !existing.some((r) => r.key === w.key && r.kind === w.kind))) {
      await sql`
        INSERT INTO contact_data_indexes (project_id, key, kind)
        SELECT ${projectId}::uuid, ${w.key}::text, ${w.kind}::text
        WHERE (SELECT count(*) FROM contact_data_indexes) < ${MAX_DATA_INDEXES}
        ON CONFLICT DO NOTHING`.execute(conn);
    }
    const { rows: pending } = await sql<{ id: string; project_id: string; key: string; kind: DataIndexKind }>`
      SELECT d.id::text, d.project_id::text, d.key, d.kind FROM contact_data_indexes d
      WHERE d.project_id = ${projectId}::uuid
        AND (NOT d.ready OR NOT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                                        WHERE i.indrelid = 'contacts'::regclass AND c.relname = ${NAME_PREFIX}::text || d.id AND i.indisvalid))
      ORDER BY d.id`.execute(conn);
    for (const row of pending) {
      await dropIndex(conn, dataIndexName(row.id)); // an earlier build that did not finish (INVALID)
      await sql.raw(await createStatement(conn, row)).execute(conn);
      await sql`UPDATE contact_data_indexes SET ready = true, ready_at = now() WHERE id = ${row.id}::bigint`.execute(conn);
      result.built.push(dataIndexName(row.id));
    }
    return result;
  });
}

/**
 * The hourly sweep: drops data key indexes no catalogue row describes (their project was deleted:
 * its rows went with it), then reconciles every project that has an index or a DYNAMIC segment
 * filtering on data (contacts grown past the threshold, segments changed while a job was lost).
 */
export async function sweepDataIndexes(db: Kysely<Database>, minContacts = DATA_INDEX_MIN_CONTACTS): Promise<ReconcileResult> {
  const dropped = await underDdlLock(db, async (conn) => {
    const { rows } = await sql<{ name: string }>`
      SELECT c.relname AS name FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = 'contacts'::regclass AND starts_with(c.relname, ${NAME_PREFIX}::text)
        AND NOT EXISTS (SELECT 1 FROM contact_data_indexes d WHERE ${NAME_PREFIX}::text || d.id = c.relname)`.execute(conn);
    for (const { name } of rows) await dropIndex(conn, name);
    return rows.map((r) => r.name);
  });
  const { rows: projects } = await sql<{ project_id: string }>`
    SELECT project_id::text FROM contact_data_indexes
    UNION
    SELECT project_id::text FROM segments WHERE type = 'DYNAMIC' AND condition::text LIKE '%"data.%'`.execute(db);
  const result: ReconcileResult = { built: [], dropped };
  for (const { project_id } of projects) {
    const r = await reconcileDataIndexes(db, project_id, minContacts);
    result.built.push(...r.built);
    result.dropped.push(...r.dropped);
  }
  return result;
}
