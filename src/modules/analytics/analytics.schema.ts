import { z } from 'zod';

/** A calendar date YYYY-MM-DD that exists (2026-02-30 does not). */
export function isCalendarDate(value: string): boolean {
  if (!/^\d{4}-\d\d-\d\d$/.test(value)) return false;
  const d = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === value;
}

const isInstant = (value: string) => z.iso.datetime({ offset: true }).safeParse(value).success;

const DateInput = z
  .string()
  .max(40)
  .superRefine((value, ctx) => {
    if (!isCalendarDate(value) && !isInstant(value)) {
      ctx.addIssue({
        code: 'custom',
        message: 'Expected a date (YYYY-MM-DD) or an ISO 8601 date-time with Z or an offset',
        params: { code: 'invalid_string' },
      });
    }
  });

/** An IANA time zone name that this runtime knows (`Europe/Berlin`, `Asia/Kolkata`, `UTC`). */
export function isTimeZone(value: string): boolean {
  // Names only: POSIX strings such as "UTC+5" mean the opposite sign of what most people expect.
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(value)) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const TimeZone = z
  .string()
  .max(64)
  .default('UTC')
  .superRefine((value, ctx) => {
    if (!isTimeZone(value)) ctx.addIssue({ code: 'custom', message: 'Expected an IANA time zone such as Europe/Berlin', params: { code: 'invalid_string' } });
  })
  .describe('IANA time zone of dates and local days and hours (default UTC)');

const startDate = DateInput.optional().describe(
  'A date (YYYY-MM-DD, from its local midnight in `tz`) or a date-time. Default: see the route',
);
const endDate = DateInput.optional().describe('A date (included: up to the next local midnight) or a date-time (excluded). Default: now');

export const RangeQuery = z.object({ startDate, endDate, tz: TimeZone });
export type RangeQuery = z.infer<typeof RangeQuery>;

export const TimeseriesQuery = RangeQuery.extend({
  interval: z.enum(['hour', 'day']).default('day').describe('One point per local hour or local day of `tz`'),
});
export type TimeseriesQuery = z.infer<typeof TimeseriesQuery>;

const Counts = {
  sent: z.int(),
  delivered: z.int(),
  opened: z.int().describe('Emails opened for the first time by a person (machine opens excluded)'),
  clicked: z.int(),
  bounced: z.int(),
  complained: z.int(),
};

const RangeAnswer = {
  startDate: z.iso.datetime().describe('First instant counted'),
  endDate: z.iso.datetime().describe('End of the range (excluded)'),
  tz: z.string(),
};

export const Timeseries = z
  .object({
    ...RangeAnswer,
    interval: z.enum(['hour', 'day']),
    data: z.array(
      z.object({
        date: z.string().describe('Day points: the local date (YYYY-MM-DD); hour points: the hour\'s first instant (ISO 8601, UTC)'),
        ...Counts,
      }),
    ),
  })
  .meta({ id: 'AnalyticsTimeseries' });
export type Timeseries = z.infer<typeof Timeseries>;

/** Larger values are clamped (like page sizes elsewhere). */
const limit = (fallback: number, max: number) =>
  z.coerce.number().int().min(1).default(fallback).transform((n) => Math.min(n, max)).describe(`Default ${fallback}, at most ${max} (larger is clamped)`);

export const TopCampaignsQuery = z.object({
  limit: limit(5, 50),
  metric: z.enum(['opens', 'clicks', 'sent']).default('opens').describe('Order by emails opened (by a person), clicked, or sent'),
});
export type TopCampaignsQuery = z.infer<typeof TopCampaignsQuery>;

const rate = (of: string) => z.number().min(0).describe(`${of}, as a fraction of sentCount (0.25 = 25 %), 0 when nothing was sent`);

export const TopCampaigns = z
  .object({
    data: z.array(
      z.object({
        id: z.uuid(),
        name: z.string(),
        subject: z.string(),
        status: z.string(),
        sentAt: z.iso.datetime().nullable(),
        sentCount: z.int(),
        openedCount: z.int().describe('Emails opened by a person (machine opens excluded)'),
        clickedCount: z.int(),
        openRate: rate('openedCount'),
        clickRate: rate('clickedCount'),
      }),
    ),
  })
  .meta({ id: 'AnalyticsTopCampaigns' });
export type TopCampaigns = z.infer<typeof TopCampaigns>;

export const CampaignStats = z
  .object({
    total: z.int(),
    active: z.int().describe('SCHEDULED or SENDING'),
    completed: z.int().describe('SENT'),
    byStatus: z.object({ DRAFT: z.int(), SCHEDULED: z.int(), SENDING: z.int(), SENT: z.int(), CANCELLED: z.int() }),
    averageOpenRate: z.number().describe('Mean of the open rates of the campaigns that sent at least one email; 0 when none did'),
    averageClickRate: z.number().describe('Mean of their click rates'),
  })
  .meta({ id: 'AnalyticsCampaignStats' });
export type CampaignStats = z.infer<typeof CampaignStats>;

export const TopEventsQuery = RangeQuery.extend({ limit: limit(10, 20) });
export type TopEventsQuery = z.infer<typeof TopEventsQuery>;

export const TopEvents = z
  .object({
    ...RangeAnswer,
    previousStartDate: z.iso.datetime().describe('The previous period: as long as the range, ending where it starts'),
    data: z.array(
      z.object({
        name: z.string(),
        count: z.int(),
        previousCount: z.int(),
        trend: z.number().nullable().describe('% change against the previous period (50 = +50 %); null when the previous period had none'),
      }),
    ),
  })
  .meta({ id: 'AnalyticsTopEvents' });
export type TopEvents = z.infer<typeof TopEvents>;

const cohortRate = (what: string) => z.number().min(0).describe(`Of the emails sent in the range, the fraction ${what} by now`);

export const ActivityStats = z
  .object({
    ...RangeAnswer,
    ...Counts,
    openedIncludingMachine: z.int().describe('Emails opened for the first time by anyone, machine opens included'),
    events: z.int().describe('Tracked events (not the service\'s own email.*, contact.*, segment.* events)'),
    openRate: cohortRate('opened by a person'),
    clickRate: cohortRate('clicked'),
    bounceRate: cohortRate('hard-bounced'),
    complaintRate: cohortRate('complained about'),
    deliveryRate: cohortRate('confirmed delivered by the relay\'s notifications'),
    clickToOpenRate: z.number().min(0).describe('Of those opened by a person, the fraction clicked'),
  })
  .meta({ id: 'ActivityStats' });
export type ActivityStats = z.infer<typeof ActivityStats>;
