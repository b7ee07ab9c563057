import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { campaignTimeseries as readTimeseries } from '../analytics/index.js';
import { topCampaignLinks } from '../tracking/index.js';
import type {
  CampaignBounce,
  CampaignBounceList,
  CampaignBouncesQuery,
  CampaignLinks,
  CampaignLinksQuery,
  CampaignTimeseries,
  CampaignTimeseriesQuery,
} from './campaigns.schema.js';
import { findCampaignOr404 } from './campaigns.service.js';
import { countCampaignFeedback, type FeedbackPosition, type FeedbackRow, listCampaignFeedback } from './insight.repo.js';

/** The campaign page's insight (docs/campaigns.md "Insight"): each read checks the campaign is the project's (404). */

type Db = Kysely<Database>;

/** GET /campaigns/:id/stats/timeseries: the campaign's buckets (migration 0031), from its first send by default. */
export async function campaignTimeseries(db: Db, projectId: string, id: string, query: CampaignTimeseriesQuery): Promise<CampaignTimeseries> {
  const campaign = await findCampaignOr404(db, projectId, id);
  return readTimeseries(db, { projectId, campaignId: campaign.id, firstSend: campaign.started_at ?? campaign.sent_at }, query);
}

/** GET /campaigns/:id/links: top URLs, and the emails clicked at all (each URL's share of clickers). */
export async function campaignLinks(db: Db, projectId: string, id: string, query: CampaignLinksQuery): Promise<CampaignLinks> {
  const campaign = await findCampaignOr404(db, projectId, id);
  const [links, clicked] = await Promise.all([topCampaignLinks(db, projectId, campaign.id, query.limit), countClickedEmails(db, projectId, campaign.id)]);
  return { data: links.map((l) => ({ url: l.url, clicks: l.clicks, uniqueClicks: l.unique_clicks })), clickedEmails: clicked };
}

/** Emails of the campaign with a click: the analytics rollup of all-time campaign counts (migration 0029), not the email rows. */
async function countClickedEmails(db: Db, projectId: string, campaignId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT coalesce(sum(clicked), 0)::int AS n FROM analytics_campaign_counts
    WHERE project_id = ${projectId}::uuid AND campaign_id = ${campaignId}::uuid`.execute(db);
  return rows[0]?.n ?? 0;
}

const POSITION_AT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** Opaque cursor: base64url of `<feedback time with microseconds>|<email id>` of the page's last row. */
export const encodeFeedbackCursor = (p: FeedbackPosition): string => Buffer.from(`${p.at}|${p.id}`).toString('base64url');

/** The position a cursor encodes; 422 on field `cursor` when it is not one this list made. */
export function decodeFeedbackCursor(cursor: string): FeedbackPosition {
  const [at, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const millis = at?.slice(0, 23) ?? '';
  const real = !Number.isNaN(new Date(`${millis}Z`).getTime()) && new Date(`${millis}Z`).toISOString().slice(0, 23) === millis;
  if (at === undefined || id === undefined || extra !== undefined || !POSITION_AT.test(at) || !isUuid(id) || !real) {
    throw validationError([{ field: 'cursor', code: 'invalid_string', message: 'Invalid cursor: pass the cursor of the previous page as is' }]);
  }
  return { at, id };
}

const text = (data: Record<string, unknown> | null, key: string): string | null => {
  const v = data?.[key];
  return typeof v === 'string' ? v : null;
};

function rowToBounce(row: FeedbackRow): CampaignBounce {
  return {
    emailId: row.id,
    toEmail: row.to_email,
    contact: row.contact_id && row.contact_email !== null ? { id: row.contact_id, email: row.contact_email } : null,
    status: row.status,
    bounceType: text(row.bounce, 'bounceType'),
    bounceSubType: text(row.bounce, 'bounceSubType'),
    reason: row.status === 'COMPLAINED' ? (text(row.complaint, 'complaintFeedbackType') ?? text(row.bounce, 'diagnosticCode')) : text(row.bounce, 'diagnosticCode'),
    at: row.at.toISOString(),
  };
}

/** GET /campaigns/:id/bounces: bounced and complained emails newest first, a cursor page at a time. */
export async function campaignBounces(db: Db, projectId: string, id: string, query: CampaignBouncesQuery): Promise<CampaignBounceList> {
  const after = query.cursor ? decodeFeedbackCursor(query.cursor) : undefined;
  const campaign = await findCampaignOr404(db, projectId, id);
  const [rows, total] = await Promise.all([
    listCampaignFeedback(db, { projectId, campaignId: campaign.id, limit: query.limit + 1, after }),
    after ? Promise.resolve(0) : countCampaignFeedback(db, projectId, campaign.id),
  ]);
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    data: page.map(rowToBounce),
    cursor: hasMore && last ? encodeFeedbackCursor({ at: last.position_at, id: last.id }) : null,
    hasMore,
    total,
  };
}
