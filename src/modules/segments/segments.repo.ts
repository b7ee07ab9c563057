import { type Kysely, type RawBuilder, type SqlBool, sql, type Transaction } from 'kysely';
import { conditionUsesField } from '../../conditions/index.js';
import type { ContactRow, Database, SegmentRow, SegmentType } from '../../db/schema.js';
import type { Segment } from './segments.schema.js';

export function rowToSegment(row: SegmentRow): Segment {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    type: row.type,
    condition: row.condition,
    trackMembership: row.track_membership,
    memberCount: row.member_count,
    projectId: row.project_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** Event name slug: lower-cased, runs of non-alphanumerics become `-`, trimmed of `-`. */
export const segmentSlug = (name: string): string =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Ids that are not uuids can match no row (and must not reach a ::uuid cast). */
export const isUuid = (id: string) => UUID.test(id);

export async function insertSegment(
  db: Kysely<Database>,
  values: { projectId: string; name: string; description: string; type: SegmentType; condition: object | null; trackMembership: boolean },
): Promise<SegmentRow> {
  return db
    .insertInto('segments')
    .values({
      project_id: values.projectId,
      name: values.name,
      description: values.description,
      type: values.type,
      condition: values.condition === null ? null : JSON.stringify(values.condition),
      track_membership: values.trackMembership,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listSegments(db: Kysely<Database>, projectId: string): Promise<SegmentRow[]> {
  return db.selectFrom('segments').selectAll().where('project_id', '=', projectId).orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

export async function findSegment(db: Kysely<Database>, projectId: string, id: string, lock = false): Promise<SegmentRow | undefined> {
  if (!isUuid(id)) return undefined;
  let q = db.selectFrom('segments').selectAll().where('project_id', '=', projectId).where('id', '=', id);
  if (lock) q = q.forUpdate();
  return q.executeTakeFirst();
}

export async function updateSegment(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  changes: { name?: string; description?: string; condition?: object; trackMembership?: boolean },
): Promise<SegmentRow | undefined> {
  return db
    .updateTable('segments')
    .set({
      ...(changes.name !== undefined && { name: changes.name }),
      ...(changes.description !== undefined && { description: changes.description }),
      ...(changes.condition !== undefined && { condition: JSON.stringify(changes.condition), condition_changed_at: sql`now()` }),
      ...(changes.trackMembership !== undefined && { track_membership: changes.trackMembership }),
      updated_at: sql`now()`,
    })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Drops the member rows (a DYNAMIC segment that stops tracking keeps none). */
export async function clearMembers(db: Kysely<Database>, segmentId: string): Promise<void> {
  await db.deleteFrom('segment_members').where('segment_id', '=', segmentId).execute();
}

/** The `segment.<id>` text as it appears inside a stored condition. */
const referencePattern = (id: string) => `%"segment.${id}"%`;

/** Active (SCHEDULED/SENDING) campaigns targeting the segment or filtering on it. */
export async function activeCampaignsUsing(db: Kysely<Database>, projectId: string, id: string): Promise<{ id: string; name: string }[]> {
  return db
    .selectFrom('campaigns')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .where('status', 'in', ['SCHEDULED', 'SENDING'])
    .where((eb) => eb.or([eb('segment_id', '=', id), sql<SqlBool>`audience_condition::text ILIKE ${referencePattern(id)}`]))
    .execute();
}

/** Other segments of the project whose condition references this one. */
export async function segmentsReferencing(db: Kysely<Database>, projectId: string, id: string): Promise<{ id: string; name: string }[]> {
  return db
    .selectFrom('segments')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .where('id', '<>', id)
    .where(sql<SqlBool>`condition::text ILIKE ${referencePattern(id)}`)
    .execute();
}

/** Segments whose condition mentions a field (`data.<key>`, `event.<name>`) — for usage endpoints. */
export async function segmentsReferencingField(db: Kysely<Database>, projectId: string, field: string): Promise<{ id: string; name: string }[]> {
  return db
    .selectFrom('segments')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .where(conditionUsesField(sql.ref('condition'), field))
    .orderBy('created_at', 'desc')
    .execute();
}

/** Deletes the segment; finished/draft campaigns pointing at it are detached (segment_id NULL). */
export async function deleteSegment(trx: Transaction<Database>, projectId: string, id: string): Promise<void> {
  await trx.updateTable('campaigns').set({ segment_id: null }).where('project_id', '=', projectId).where('segment_id', '=', id).execute();
  await trx.deleteFrom('segments').where('project_id', '=', projectId).where('id', '=', id).execute();
}

/** One page of contacts matching `where`, newest first. */
export async function pageContacts(
  db: Kysely<Database>,
  projectId: string,
  where: RawBuilder<SqlBool>,
  page: { limit: number; offset: number },
): Promise<ContactRow[]> {
  const { rows } = await sql<ContactRow>`SELECT c.* FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}
    ORDER BY c.created_at DESC, c.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`.execute(db);
  return rows;
}

/** A member count younger than this is reused by members pages as is (docs/conditions.md, "Members page total"). */
export const COUNT_REUSE_SECONDS = 60;

/**
 * The segment's cached member count if it was counted for its current condition (by the
 * database clock), and whether it is younger than COUNT_REUSE_SECONDS; undefined otherwise.
 */
export async function cachedCount(db: Kysely<Database>, segmentId: string): Promise<{ count: number; fresh: boolean } | undefined> {
  const row = await db
    .selectFrom('segments')
    .select(['member_count', sql<boolean>`counted_at > now() - make_interval(secs => ${COUNT_REUSE_SECONDS})`.as('fresh')])
    .where('id', '=', segmentId)
    .where('counted_at', '>=', sql<Date>`condition_changed_at`)
    .executeTakeFirst();
  return row && { count: row.member_count, fresh: row.fresh };
}

/**
 * The effective_cache_size a count is planned with: less than the
 * contacts heap of a large project, so a count matching much of a project reads it in physical
 * order (Bitmap Heap Scan) instead of row by row in index order. With the whole cache assumed
 * (and random_page_cost 1.1) the planner prices both alike, but a plain index scan visiting 62 %
 * of 1,000,000 contacts took 370–540 ms against 150–190 ms as a bitmap scan (`data.age > 40`,
 * bench/segments.md). Only the price of heap pages re-read by a large index scan changes: counts
 * reading few rows, and index-only scans, plan as before.
 */
export const COUNT_EFFECTIVE_CACHE = '32MB';

/** `fn` with effective_cache_size at COUNT_EFFECTIVE_CACHE: in a transaction of its own, or restored after it in the caller's. */
export async function withCountPlanning<T>(db: Kysely<Database>, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const set = (trx: Kysely<Database>, value: string) => sql`SELECT set_config('effective_cache_size', ${value}::text, true)`.execute(trx);
  if (!db.isTransaction) {
    return db.transaction().execute(async (trx) => {
      await set(trx, COUNT_EFFECTIVE_CACHE);
      return fn(trx);
    });
  }
  const { rows } = await sql<{ v: string }>`SELECT current_setting('effective_cache_size') AS v`.execute(db);
  await set(db, COUNT_EFFECTIVE_CACHE);
  const result = await fn(db); // a failure aborts the transaction, and the setting with it
  await set(db, rows[0]?.v ?? '4GB');
  return result;
}

export async function countContacts(db: Kysely<Database>, projectId: string, where: RawBuilder<SqlBool>): Promise<number> {
  const { rows } = await withCountPlanning(db, (conn) =>
    sql<{ n: string }>`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}`.execute(conn),
  );
  return Number(rows[0]?.n ?? 0);
}

/** Membership of a static (or tracked) segment as a condition over `c`. */
export const memberOf = (segmentId: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = ${segmentId}::uuid AND sm.contact_id = c.id)`;

export async function countMembers(db: Kysely<Database>, segmentId: string): Promise<number> {
  const { rows } = await sql<{ n: string }>`SELECT count(*) AS n FROM segment_members WHERE segment_id = ${segmentId}::uuid`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * Caches a member count (and, for a compute, the compute time). With `countedFor`, the count was
 * made for that condition: a segment whose condition changed meanwhile keeps its count.
 */
export async function setMemberCount(
  db: Kysely<Database>,
  segmentId: string,
  count: number,
  opts: { computed?: boolean; countedFor?: SegmentRow['condition'] } = {},
): Promise<void> {
  let q = db
    .updateTable('segments')
    .set({ member_count: count, counted_at: sql`now()`, ...(opts.computed && { computed_at: sql`now()` }) })
    .where('id', '=', segmentId);
  if (opts.countedFor !== undefined) {
    const condition = opts.countedFor === null ? null : JSON.stringify(opts.countedFor);
    q = q.where(sql<SqlBool>`condition IS NOT DISTINCT FROM ${condition}::jsonb`);
  }
  await q.execute();
}

/** Adds contacts as members; answers the ids that were not members yet. */
export async function addMembers(trx: Transaction<Database>, projectId: string, segmentId: string, contactIds: string[]): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    WITH ins AS (
      INSERT INTO segment_members (segment_id, project_id, contact_id)
      SELECT ${segmentId}::uuid, ${projectId}::uuid, unnest(${contactIds}::uuid[])
      ON CONFLICT DO NOTHING RETURNING 1)
    SELECT count(*) AS n FROM ins`.execute(trx);
  return Number(rows[0]?.n ?? 0);
}

export async function removeMembers(trx: Transaction<Database>, segmentId: string, contactIds: string[]): Promise<number> {
  const res = await trx
    .deleteFrom('segment_members')
    .where('segment_id', '=', segmentId)
    .where(sql<SqlBool>`contact_id = ANY(${contactIds}::uuid[])`)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
