import type { Kysely, RawBuilder, SqlBool } from 'kysely';
import { compileCondition, validateCondition } from '../../conditions/index.js';
import type { Database, SegmentRow } from '../../db/schema.js';
import { conflict, LegacyBadRequest, notFound } from '../../http/errors.js';
import { rowToContact } from '../contacts/index.js';
import { workflowsUsingSegment } from '../workflows/index.js';
import { computeSegment, countWithin, membershipCondition, recount, refreshSegmentCount, within } from './compute.js';
import { enqueueDataIndexes, usesDataIndexes } from './data-indexes.js';
import {
  activeCampaignsUsing,
  clearMembers,
  countMembers,
  deleteSegment,
  findSegment,
  insertSegment,
  listSegments,
  pageContacts,
  cachedCount,
  countContacts,
  rowToSegment,
  segmentsReferencing,
  updateSegment,
} from './segments.repo.js';
import type { ComputeResult, ConditionCount, CreateSegmentBody, MemberPage, MembersQuery, Segment, UpdateSegmentBody } from './segments.schema.js';

const isObject = (v: unknown): v is object => typeof v === 'object' && v !== null && !Array.isArray(v);

export async function requireSegment(db: Kysely<Database>, projectId: string, id: string, lock = false): Promise<SegmentRow> {
  const seg = await findSegment(db, projectId, id, lock);
  if (!seg) throw notFound('Segment');
  return seg;
}

/**
 * DYNAMIC needs an object condition (legacy 400 otherwise), validated (422); STATIC ignores it.
 * A DYNAMIC segment is counted at once (within COUNT_ON_WRITE_MS), so memberCount starts right.
 */
export async function createSegment(db: Kysely<Database>, projectId: string, body: CreateSegmentBody): Promise<Segment> {
  const type = body.type ?? 'DYNAMIC';
  let condition: object | null = null;
  if (type === 'DYNAMIC') {
    if (!isObject(body.condition)) throw new LegacyBadRequest('Condition is required for dynamic segments');
    condition = await validateCondition(db, projectId, body.condition, 'condition');
  }
  const row = await insertSegment(db, {
    projectId,
    name: body.name,
    description: body.description ?? '',
    type,
    condition,
    trackMembership: body.trackMembership ?? false,
  });
  if (usesDataIndexes(condition)) await enqueueDataIndexes(db, projectId);
  const memberCount = type === 'DYNAMIC' ? await countWithin(db, row) : undefined;
  return rowToSegment({ ...row, member_count: memberCount ?? row.member_count });
}

/**
 * POST /segments/count: how many contacts an unsaved condition matches now (the segment builder's
 * live count). Validated as a segment's condition is (422 naming the filter); one count query.
 */
export async function countCondition(db: Kysely<Database>, projectId: string, condition: object): Promise<ConditionCount> {
  const tree = await validateCondition(db, projectId, condition, 'condition');
  return { count: await countContacts(db, projectId, await compileCondition(db, projectId, tree, 'c')) };
}

export async function getSegments(db: Kysely<Database>, projectId: string): Promise<Segment[]> {
  return (await listSegments(db, projectId)).map(rowToSegment);
}

export async function getSegment(db: Kysely<Database>, projectId: string, id: string): Promise<Segment> {
  return rowToSegment(await requireSegment(db, projectId, id));
}

/**
 * A condition is accepted on DYNAMIC segments only (409 on STATIC) and validated with the segment
 * as `selfId` (no cycles); a new condition is counted at once, as on create. A DYNAMIC segment
 * that stops tracking drops its member rows.
 */
export async function patchSegment(db: Kysely<Database>, projectId: string, id: string, body: UpdateSegmentBody): Promise<Segment> {
  const seg = await requireSegment(db, projectId, id);
  let condition: object | undefined;
  if (body.condition !== undefined) {
    if (seg.type === 'STATIC') throw conflict('A STATIC segment has no condition: manage its members instead', { type: seg.type });
    condition = await validateCondition(db, projectId, body.condition, 'condition', { selfId: seg.id });
  }
  const row = await db.transaction().execute(async (trx) => {
    const updated = await updateSegment(trx, projectId, seg.id, { ...body, condition });
    if (!updated) throw notFound('Segment');
    if (updated.type === 'DYNAMIC' && seg.track_membership && !updated.track_membership) await clearMembers(trx, updated.id);
    return updated;
  });
  if (condition !== undefined && (usesDataIndexes(seg.condition) || usesDataIndexes(condition))) await enqueueDataIndexes(db, projectId);
  const memberCount = condition !== undefined ? await countWithin(db, row) : undefined;
  return rowToSegment({ ...row, member_count: memberCount ?? row.member_count });
}

/** 409 while an active campaign, another segment or a workflow CONDITION step uses it; draft/finished campaigns are detached. */
export async function removeSegment(db: Kysely<Database>, projectId: string, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const seg = await requireSegment(trx, projectId, id, true);
    const campaigns = await activeCampaignsUsing(trx, projectId, seg.id);
    if (campaigns.length > 0) {
      throw conflict('The segment is used by a scheduled or sending campaign', { campaigns: campaigns.map((c) => c.id) });
    }
    const segments = await segmentsReferencing(trx, projectId, seg.id);
    if (segments.length > 0) {
      throw conflict("Other segments' conditions reference this segment", { segments: segments.map((s) => s.id) });
    }
    // A workflow CONDITION on a deleted segment could no longer be evaluated: its executions would fail there.
    const workflows = await workflowsUsingSegment(trx, projectId, seg.id);
    if (workflows.length > 0) {
      throw conflict('Workflow conditions reference this segment: change those steps first', { workflows: workflows.map((w) => ({ id: w.id, name: w.name })) });
    }
    await deleteSegment(trx, projectId, seg.id);
    if (usesDataIndexes(seg.condition)) await enqueueDataIndexes(trx, projectId);
  });
}

/**
 * Live members (DYNAMIC: the compiled condition; STATIC: member rows), newest contact first. The
 * total of a DYNAMIC segment: see memberTotal (docs/conditions.md, "Members page total").
 */
export async function listMembers(db: Kysely<Database>, projectId: string, id: string, query: MembersQuery): Promise<MemberPage> {
  const seg = await requireSegment(db, projectId, id);
  const where = await membershipCondition(db, seg);
  const [rows, total] = await Promise.all([
    pageContacts(db, projectId, where, { limit: query.pageSize, offset: (query.page - 1) * query.pageSize }),
    seg.type === 'DYNAMIC' ? memberTotal(db, seg, LIVE_COUNT_WAIT_MS, where) : countMembers(db, seg.id),
  ]);
  return { data: rows.map(rowToContact), page: query.page, pageSize: query.pageSize, total, totalPages: Math.ceil(total / query.pageSize) };
}

/**
 * The live members of the project's segment `id` as a condition over contacts `c`, by the
 * members page's rule (DYNAMIC, tracked or not: its condition compiled; STATIC: its member
 * rows). 404 when the project has no such segment, 422 when its stored condition no longer passes.
 */
export async function segmentMembership(db: Kysely<Database>, projectId: string, id: string): Promise<RawBuilder<SqlBool>> {
  return membershipCondition(db, await requireSegment(db, projectId, id));
}

/** A live count slower than this answers the page with the segment's last count (it finishes in the background). */
export const LIVE_COUNT_WAIT_MS = 120;

/**
 * The total of a DYNAMIC segment's members page: its count as cached if younger than a minute;
 * otherwise a live count, unless that takes longer than `waitMs` and a count of the segment's
 * current condition exists: then that one, while the live count finishes in the background and
 * replaces it. Never counted for this condition: the live count, however long.
 */
export async function memberTotal(db: Kysely<Database>, seg: SegmentRow, waitMs = LIVE_COUNT_WAIT_MS, where?: RawBuilder<SqlBool>): Promise<number> {
  const cached = await cachedCount(db, seg.id);
  if (cached?.fresh) return cached.count;
  const live = recount(db, seg, where);
  if (!cached) return live;
  return (await within(live, waitMs)) ?? cached.count;
}

export async function computeMembers(db: Kysely<Database>, projectId: string, id: string): Promise<ComputeResult> {
  const seg = await requireSegment(db, projectId, id);
  const result = await computeSegment(db, projectId, seg.id);
  if (!result) throw notFound('Segment');
  return result;
}

export async function refreshCount(db: Kysely<Database>, projectId: string, id: string): Promise<Segment> {
  const seg = await requireSegment(db, projectId, id);
  const memberCount = await refreshSegmentCount(db, seg);
  return rowToSegment({ ...seg, member_count: memberCount });
}
