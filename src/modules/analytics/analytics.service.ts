import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import {
  campaignStats as readCampaignStats,
  countEventsByName,
  countTrackedEvents,
  emailTimeseries,
  emailTotals,
  type RangeDefault,
  type RangeEnd,
  resolveRange,
  splitRange,
  topCampaigns as readTopCampaigns,
} from './analytics.repo.js';
import {
  type ActivityStats,
  type CampaignStats,
  isCalendarDate,
  type RangeQuery,
  type Timeseries,
  type TimeseriesQuery,
  type TopCampaigns,
  type TopCampaignsQuery,
  type TopEvents,
  type TopEventsQuery,
} from './analytics.schema.js';

type Db = Kysely<Database>;

/** Longest range: 366 days, plus the hour a range of local days gains when it spans the end of summer time. */
export const MAX_RANGE_DAYS = 366;
const MAX_RANGE_MS = MAX_RANGE_DAYS * 86_400_000 + 3_600_000;

const end = (value: string | undefined): RangeEnd => (value === undefined ? {} : isCalendarDate(value) ? { date: value } : { instant: value });

/** The range's instants; 422 when it ends before it starts or is longer than 366 days. */
export async function rangeOf(db: Db, query: RangeQuery, defaultStart: RangeDefault): Promise<{ start: Date; end: Date }> {
  const range = await resolveRange(db, { tz: query.tz, start: end(query.startDate), end: end(query.endDate), defaultStart });
  if (range.end.getTime() <= range.start.getTime()) {
    throw validationError([{ field: 'endDate', code: 'too_small', message: 'endDate must be after startDate' }]);
  }
  if (range.end.getTime() - range.start.getTime() > MAX_RANGE_MS) {
    throw validationError([{ field: 'endDate', code: 'too_big', message: `The range must not be longer than ${MAX_RANGE_DAYS} days` }]);
  }
  return range;
}

/** A fraction rounded to 4 decimals (as the campaign stats); 0 when the denominator is 0. */
export const rate = (n: number, of: number) => (of <= 0 ? 0 : Math.round((n / of) * 10_000) / 10_000);

export async function timeseries(db: Db, projectId: string, query: TimeseriesQuery): Promise<Timeseries> {
  const range = await rangeOf(db, query, query.interval === 'hour' ? 'last-24-local-hours' : 'last-30-local-days');
  const rows = await emailTimeseries(db, { projectId, ...range, tz: query.tz, interval: query.interval });
  return {
    startDate: (rows[0]?.start ?? range.start).toISOString(),
    endDate: range.end.toISOString(),
    tz: query.tz,
    interval: query.interval,
    data: rows.map((r) => ({
      date: r.day ?? r.start.toISOString(),
      sent: r.sent,
      delivered: r.delivered,
      opened: r.opened,
      clicked: r.clicked,
      bounced: r.bounced,
      complained: r.complained,
    })),
  };
}

/**
 * One campaign's points (migration 0031's buckets; docs/campaigns.md "Insight"). The range
 * defaults to the campaign's start of sending (`firstSend`) until now, at most 366 days from its
 * start; a campaign never sent and no startDate: no points.
 */
export async function campaignTimeseries(
  db: Db,
  input: { projectId: string; campaignId: string; firstSend: Date | null },
  query: TimeseriesQuery,
): Promise<Omit<Timeseries, 'data'> & { data: Omit<Timeseries['data'][number], 'sent'>[] }> {
  const base = { tz: query.tz, interval: query.interval };
  if (query.startDate === undefined && input.firstSend === null) {
    const now = new Date().toISOString();
    return { ...base, startDate: now, endDate: now, data: [] };
  }
  const startDate = query.startDate ?? input.firstSend?.toISOString();
  const range = await rangeOf(db, { ...query, startDate }, 'last-30-days');
  if (query.endDate === undefined) range.end = new Date(Math.min(range.end.getTime(), range.start.getTime() + MAX_RANGE_DAYS * 86_400_000));
  const rows = await emailTimeseries(db, { projectId: input.projectId, campaignId: input.campaignId, ...range, ...base });
  return {
    ...base,
    startDate: (rows[0]?.start ?? range.start).toISOString(),
    endDate: range.end.toISOString(),
    data: rows.map((r) => ({
      date: r.day ?? r.start.toISOString(),
      delivered: r.delivered,
      opened: r.opened,
      clicked: r.clicked,
      bounced: r.bounced,
      complained: r.complained,
    })),
  };
}

const QUARTER = 900_000;

/** [start, end) widened to whole 15-minute buckets: what the rollups can count. */
export const widen = (range: { start: Date; end: Date }) => ({
  start: new Date(Math.floor(range.start.getTime() / QUARTER) * QUARTER),
  end: new Date(Math.ceil(range.end.getTime() / QUARTER) * QUARTER),
});

export async function activityStats(db: Db, projectId: string, query: RangeQuery): Promise<ActivityStats> {
  const range = widen(await rangeOf(db, query, 'last-30-days'));
  const [t, events] = await Promise.all([emailTotals(db, { projectId, ...range }), countTrackedEvents(db, { projectId, ...range })]);
  return {
    startDate: range.start.toISOString(),
    endDate: range.end.toISOString(),
    tz: query.tz,
    sent: t.sent,
    delivered: t.delivered,
    opened: t.opened,
    clicked: t.clicked,
    bounced: t.bounced,
    complained: t.complained,
    openedIncludingMachine: t.openedAny,
    events,
    openRate: rate(t.cohort.opened, t.sent),
    clickRate: rate(t.cohort.clicked, t.sent),
    bounceRate: rate(t.cohort.bounced, t.sent),
    complaintRate: rate(t.cohort.complained, t.sent),
    deliveryRate: rate(t.cohort.delivered, t.sent),
    clickToOpenRate: rate(t.cohort.clicked, t.cohort.opened),
  };
}

export async function topCampaigns(db: Db, projectId: string, query: TopCampaignsQuery): Promise<TopCampaigns> {
  const rows = await readTopCampaigns(db, { projectId, ...query });
  return {
    data: rows.map((r) => ({
      id: r.id,
      name: r.name,
      subject: r.subject,
      status: r.status,
      sentAt: r.sent_at?.toISOString() ?? null,
      sentCount: r.sent,
      openedCount: r.opened,
      clickedCount: r.clicked,
      openRate: rate(r.opened, r.sent),
      clickRate: rate(r.clicked, r.sent),
    })),
  };
}

export async function campaignStats(db: Db, projectId: string): Promise<CampaignStats> {
  const row = await readCampaignStats(db, projectId);
  const s = row.by_status ?? {};
  const n = (status: string) => s[status] ?? 0;
  const round = (x: number | null) => (x === null ? 0 : Math.round(x * 10_000) / 10_000);
  return {
    total: Object.values(s).reduce((a, b) => a + b, 0),
    active: n('SCHEDULED') + n('SENDING'),
    completed: n('SENT'),
    byStatus: { DRAFT: n('DRAFT'), SCHEDULED: n('SCHEDULED'), SENDING: n('SENDING'), SENT: n('SENT'), CANCELLED: n('CANCELLED') },
    averageOpenRate: round(row.average_open_rate),
    averageClickRate: round(row.average_click_rate),
  };
}

/** % change, 2 decimals; null without a previous count. */
export const trend = (count: number, previous: number) => (previous === 0 ? null : Math.round(((count - previous) / previous) * 10_000) / 100);

export async function topEvents(db: Db, projectId: string, query: TopEventsQuery): Promise<TopEvents> {
  const { start: from, end: to } = widen(await rangeOf(db, query, 'last-30-days'));
  const current = splitRange(from, to);
  // The previous period: as long as the range (in 15-minute buckets), ending where it starts.
  const previousStart = new Date(from.getTime() - (to.getTime() - from.getTime()));
  const rows = await countEventsByName(db, { projectId, periods: [current, splitRange(previousStart, from)], limit: query.limit });
  return {
    startDate: from.toISOString(),
    endDate: to.toISOString(),
    previousStartDate: previousStart.toISOString(),
    tz: query.tz,
    data: rows.map((r) => {
      const [count = 0, previousCount = 0] = r.counts;
      return { name: r.name, count, previousCount, trend: trend(count, previousCount) };
    }),
  };
}
