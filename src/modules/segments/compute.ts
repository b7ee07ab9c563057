import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { compileCondition } from '../../conditions/index.js';
import type { Database, SegmentRow } from '../../db/schema.js';
import { countContacts, countMembers, memberOf, segmentSlug, setMemberCount } from './segments.repo.js';
import type { ComputeResult } from './segments.schema.js';

/**
 * The live membership of a segment as a condition over contacts `c`: DYNAMIC → its compiled
 * condition, STATIC → its member rows. A stored condition that no longer passes validation, or
 * whose referenced segments exceed the limits, is a 422 on field `condition` (compileCondition).
 */
export async function membershipCondition(db: Kysely<Database>, seg: SegmentRow): Promise<RawBuilder<SqlBool>> {
  if (seg.type === 'STATIC') return memberOf(seg.id);
  return compileCondition(db, seg.project_id, seg.condition, 'c');
}

/** Create and a condition change wait this long for the segment's first count (it goes on after). */
export const COUNT_ON_WRITE_MS = 2_000;

/** Live counts running in this process, by segment and condition: a second caller joins the first. */
const counting = new Map<string, Promise<number>>();

/**
 * Counts a segment's live members and caches the count; one count per segment and condition at a
 * time here. `where`: the segment's membershipCondition when the caller has compiled it already.
 */
export function recount(db: Kysely<Database>, seg: SegmentRow, where?: RawBuilder<SqlBool>): Promise<number> {
  const key = `${seg.id}:${JSON.stringify(seg.condition)}`;
  let running = counting.get(key);
  if (!running) {
    running = (async () => {
      const count = await countContacts(db, seg.project_id, where ?? (await membershipCondition(db, seg)));
      await setMemberCount(db, seg.id, count, { countedFor: seg.condition });
      return count;
    })().finally(() => counting.delete(key));
    // Callers that stopped waiting are gone: a failure (database stopping) only leaves the old count.
    running.catch(() => undefined);
    counting.set(key, running);
  }
  return running;
}

/** The promise's value if it settles within `ms`, else undefined (the work goes on). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Counts a DYNAMIC segment's live members and caches the count, waiting at most `waitMs`: a
 * slower count answers undefined and lands in the cache when it finishes. Used when a segment is
 * created or its condition changes, so its memberCount is right from the start.
 */
export async function countWithin(db: Kysely<Database>, seg: SegmentRow, waitMs = COUNT_ON_WRITE_MS): Promise<number | undefined> {
  return within(recount(db, seg), waitMs);
}

/** POST /segments/:id/refresh: counts the live members and caches the count. No events, no member rows. */
export async function refreshSegmentCount(db: Kysely<Database>, seg: SegmentRow): Promise<number> {
  const count = seg.type === 'STATIC' ? await countMembers(db, seg.id) : await countContacts(db, seg.project_id, await membershipCondition(db, seg));
  await setMemberCount(db, seg.id, count, { countedFor: seg.condition });
  return count;
}

/**
 * Recomputes a tracked DYNAMIC segment, set-based: leavers are deleted from segment_members and
 * get a `segment.<slug>.exit` event, newcomers are inserted and get `segment.<slug>.entry` (one
 * statement each). Computations of one segment are serialised by a transaction-scoped advisory
 * lock on its id, and each statement runs on a fresh READ COMMITTED snapshot taken after the
 * lock, so a change is recorded exactly once however many computes race. Untracked or STATIC
 * segments only get their count refreshed (entered = exited = 0). Undefined: segment gone.
 */
export async function computeSegment(db: Kysely<Database>, projectId: string, segmentId: string): Promise<ComputeResult | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`segment:${segmentId}`}, 0))`.execute(trx);
    const seg = await trx.selectFrom('segments').selectAll().where('project_id', '=', projectId).where('id', '=', segmentId).executeTakeFirst();
    if (!seg) return undefined;
    if (seg.type !== 'DYNAMIC' || !seg.track_membership) {
      return { memberCount: await refreshSegmentCount(trx, seg), entered: 0, exited: 0 };
    }
    const where = await membershipCondition(trx, seg);
    const slug = segmentSlug(seg.name);
    const payload = JSON.stringify({ segmentId: seg.id, segmentName: seg.name });
    const exited = await sql<{ n: string }>`
      WITH left_members AS (
        DELETE FROM segment_members sm
        WHERE sm.segment_id = ${seg.id}::uuid
          AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = sm.contact_id AND c.project_id = ${projectId}::uuid AND ${where})
        RETURNING sm.contact_id),
      ev AS (
        INSERT INTO events (project_id, contact_id, name, data)
        SELECT ${projectId}::uuid, contact_id, ${`segment.${slug}.exit`}, ${payload}::jsonb FROM left_members
        RETURNING 1)
      SELECT count(*) AS n FROM ev`.execute(trx);
    const entered = await sql<{ n: string }>`
      WITH joined AS (
        INSERT INTO segment_members (segment_id, project_id, contact_id)
        SELECT ${seg.id}::uuid, ${projectId}::uuid, c.id FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}
        ON CONFLICT DO NOTHING
        RETURNING contact_id),
      ev AS (
        INSERT INTO events (project_id, contact_id, name, data)
        SELECT ${projectId}::uuid, contact_id, ${`segment.${slug}.entry`}, ${payload}::jsonb FROM joined
        RETURNING 1)
      SELECT count(*) AS n FROM ev`.execute(trx);
    const memberCount = await countMembers(trx, seg.id);
    await setMemberCount(trx, seg.id, memberCount, { computed: true, countedFor: seg.condition });
    return { memberCount, entered: Number(entered.rows[0]?.n ?? 0), exited: Number(exited.rows[0]?.n ?? 0) };
  });
}

/** Tracked DYNAMIC segments of every project (the cron fans out one job per segment). */
export async function trackedSegmentIds(db: Kysely<Database>): Promise<{ id: string; project_id: string }[]> {
  return db.selectFrom('segments').select(['id', 'project_id']).where('type', '=', 'DYNAMIC').where('track_membership', '=', true).execute();
}
