import type { Kysely } from 'kysely';
import { CAMPAIGN_STATUSES, type CampaignRow, type CampaignStatus, type Database } from '../../db/schema.js';
import { ApiError, ErrorCode, notFound } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { assertVerifiedSender } from '../domains/index.js';
import { countCampaignEmails } from '../emails/index.js';
import { TEMPLATE_LIMITS } from '../templates/index.js';
import { resolveAudience } from './audience.js';
import {
  type CampaignValues,
  copyCampaign,
  countCampaigns,
  deleteCampaign,
  findCampaignById,
  insertCampaign,
  listCampaignPage,
  rowToCampaign,
  updateCampaign,
  ZERO_COUNTS,
} from './campaigns.repo.js';
import type { Campaign, CampaignList, CampaignStats, CreateCampaignBody, ListCampaignsQuery, UpdateCampaignBody } from './campaigns.schema.js';
import { assertTransition, CampaignAction } from './state.js';

type Db = Kysely<Database>;

/** Campaigns answer an unverified sender with 403 code INTERNAL_SERVER_ERROR (SPEC Errors), at create, update and send. */
export const checkSender = (db: Db, projectId: string, fromEmail: string) =>
  assertVerifiedSender(db, { projectId, fromEmail, code: ErrorCode.INTERNAL_SERVER_ERROR });

const isStatus = (s: string): s is CampaignStatus => (CAMPAIGN_STATUSES as readonly string[]).includes(s);

/** Rows to API objects, with their counters from ONE aggregate over the page's emails. */
export async function withCounts(db: Db, rows: readonly CampaignRow[]): Promise<Campaign[]> {
  const counts = await countCampaignEmails(
    db,
    rows.filter((r) => r.status !== 'DRAFT').map((r) => r.id),
  );
  return rows.map((r) => rowToCampaign(r, counts.get(r.id) ?? ZERO_COUNTS));
}

export async function listCampaigns(db: Db, projectId: string, query: ListCampaignsQuery): Promise<CampaignList> {
  const { page, pageSize, sort, dir } = query;
  if (query.status !== undefined && !isStatus(query.status)) {
    throw new ApiError(400, ErrorCode.BAD_REQUEST, `Unknown status "${query.status}": use one of ${CAMPAIGN_STATUSES.join(', ')}`);
  }
  const filter = { status: query.status, search: query.search?.trim() || undefined };
  const [rows, total] = await Promise.all([
    listCampaignPage(db, projectId, { filter, sort, dir, limit: pageSize, offset: (page - 1) * pageSize }),
    countCampaigns(db, projectId, filter),
  ]);
  return { data: await withCounts(db, rows), page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

export async function findCampaignOr404(db: Db, projectId: string, id: string): Promise<CampaignRow> {
  const row = isUuid(id) ? await findCampaignById(db, projectId, id) : undefined;
  if (!row) throw notFound('Campaign');
  return row;
}

export async function getCampaign(db: Db, projectId: string, id: string): Promise<Campaign> {
  const [campaign] = await withCounts(db, [await findCampaignOr404(db, projectId, id)]);
  if (!campaign) throw notFound('Campaign');
  return campaign;
}

export async function createCampaign(db: Db, projectId: string, body: CreateCampaignBody): Promise<Campaign> {
  await checkSender(db, projectId, body.from);
  const audience = await resolveAudience(db, projectId, {
    audienceType: body.audienceType ?? 'ALL',
    segmentId: body.segmentId,
    audienceCondition: body.audienceCondition,
  });
  const row = await insertCampaign(db, projectId, {
    name: body.name ?? '',
    description: body.description ?? '',
    subject: body.subject ?? '',
    body: body.body ?? '',
    from: body.from,
    fromName: body.fromName ?? null,
    replyTo: body.replyTo ?? null,
    type: body.type ?? 'MARKETING',
    ...audience,
  });
  return rowToCampaign(row);
}

/**
 * PUT: the given fields replace the stored ones, omitted ones are kept; the merged audience
 * is validated again. Only DRAFT or SCHEDULED (409 otherwise), checked on the locked row so a
 * send that starts meanwhile cannot be edited under its fan-out.
 */
export async function putCampaign(db: Db, projectId: string, id: string, body: UpdateCampaignBody): Promise<Campaign> {
  if (!isUuid(id)) throw notFound('Campaign');
  const current = await findCampaignOr404(db, projectId, id);
  assertTransition(current.status, CampaignAction.update);
  if (body.from !== undefined && body.from.toLowerCase() !== current.from_email.toLowerCase()) await checkSender(db, projectId, body.from);
  const audienceType = body.audienceType ?? current.audience_type;
  const audience = await resolveAudience(db, projectId, {
    audienceType,
    segmentId: body.segmentId !== undefined ? body.segmentId : current.segment_id,
    audienceCondition: body.audienceCondition !== undefined ? body.audienceCondition : current.audience_condition,
  });
  const changes: Partial<CampaignValues> = {
    name: body.name,
    description: body.description,
    subject: body.subject,
    body: body.body,
    from: body.from,
    fromName: body.fromName,
    replyTo: body.replyTo,
    type: body.type,
    ...audience,
  };
  const row = await db.transaction().execute(async (trx) => {
    const locked = await findCampaignById(trx, projectId, id, { forUpdate: true });
    if (!locked) throw notFound('Campaign');
    assertTransition(locked.status, CampaignAction.update);
    return updateCampaign(trx, projectId, id, changes);
  });
  if (!row) throw notFound('Campaign');
  return (await withCounts(db, [row]))[0] ?? rowToCampaign(row);
}

/** 204; 409 while SCHEDULED or SENDING ("active executions"). Sent emails keep their rows. */
export async function removeCampaign(db: Db, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Campaign');
  await db.transaction().execute(async (trx) => {
    const locked = await findCampaignById(trx, projectId, id, { forUpdate: true });
    if (!locked) throw notFound('Campaign');
    assertTransition(locked.status, CampaignAction.delete);
    await deleteCampaign(trx, projectId, id);
  });
}

/** A new DRAFT "<name> (copy)" with the same content and audience; no schedule, zero counters. */
export async function duplicateCampaign(db: Db, projectId: string, id: string): Promise<Campaign> {
  const row = isUuid(id) ? await copyCampaign(db, projectId, id, TEMPLATE_LIMITS.name) : undefined;
  if (!row) throw notFound('Campaign');
  return rowToCampaign(row);
}

const rate = (n: number, of: number) => (of === 0 ? 0 : Math.round((n / of) * 10_000) / 10_000);

/** GET /campaigns/:id/stats: one aggregate over the campaign's emails; rates over sent (0 when none). */
export async function campaignStats(db: Db, projectId: string, id: string): Promise<CampaignStats> {
  const row = await findCampaignOr404(db, projectId, id);
  const c = (await countCampaignEmails(db, [row.id])).get(row.id) ?? ZERO_COUNTS;
  return {
    ...c,
    deliveryRate: rate(c.delivered, c.sent),
    openRate: rate(c.opened, c.sent),
    clickRate: rate(c.clicked, c.sent),
    bounceRate: rate(c.bounced, c.sent),
    complaintRate: rate(c.complained, c.sent),
  };
}
