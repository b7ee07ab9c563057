import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';

/**
 * Reads of the analytics rollups (migration 0029; docs/analytics.md). Every query reads the
 * counter tables, never `emails` or `events`: its cost depends on the range and the number of
 * event names or campaigns, not on how many emails or events the project has.
 */

type Db = Kysely<Database>;

/** An end of a range as given: a calendar date in the zone, an instant, or nothing (the default). */
export interface RangeEnd {
  date?: string | undefined;
  instant?: string | undefined;
}

/** How the start defaults when it is not given. */
export type RangeDefault = 'last-30-days' | 'last-30-local-days' | 'last-24-local-hours';

/** PostgreSQL does not know the zone (its tz database may differ from the one Intl checked). */
function rethrowUnknownZone(err: unknown, tz: string): never {
  const e = typeof err === 'object' && err !== null ? (err as { code?: unknown; message?: unknown }) : {};
  if (e.code === '22023' && typeof e.message === 'string' && /time zone/i.test(e.message)) {
    throw validationError([{ field: 'tz', code: 'invalid_string', message: `Unknown time zone: ${tz}` }]);
  }
  throw err;
}

/** The local hour's start of instant `x` (SQL), exact across DST and :30/:45 offsets. */
const localHourStart = (x: ReturnType<typeof sql>, tz: string) =>
  sql`(${x} - ((${x} AT TIME ZONE ${tz}) - date_trunc('hour', ${x} AT TIME ZONE ${tz})))`;

/**
 * The instants [start, end) of a range: a start date is its local midnight in `tz`, an end date
 * the local midnight after it (the end date is included), instants are taken as they are.
 */
export async function resolveRange(
  db: Db,
  input: { tz: string; start: RangeEnd; end: RangeEnd; defaultStart: RangeDefault },
): Promise<{ start: Date; end: Date }> {
  const { tz, start, end } = input;
  const e = sql`i.e`;
  const last = sql`(i.e - interval '1 microsecond')`;
  try {
    const { rows } = await sql<{ start: Date; end: Date }>`
      WITH i AS (
        SELECT CASE WHEN ${end.date ?? null}::date IS NOT NULL THEN ((${end.date ?? null}::date + 1)::timestamp AT TIME ZONE ${tz})
                    WHEN ${end.instant ?? null}::timestamptz IS NOT NULL THEN ${end.instant ?? null}::timestamptz
                    ELSE now() END AS e
      )
      SELECT
        CASE WHEN ${start.date ?? null}::date IS NOT NULL THEN (${start.date ?? null}::date::timestamp AT TIME ZONE ${tz})
             WHEN ${start.instant ?? null}::timestamptz IS NOT NULL THEN ${start.instant ?? null}::timestamptz
             WHEN ${input.defaultStart} = 'last-24-local-hours' THEN ${localHourStart(last, tz)} - interval '23 hours'
             WHEN ${input.defaultStart} = 'last-30-local-days' THEN ((((${last}) AT TIME ZONE ${tz})::date - 29)::timestamp AT TIME ZONE ${tz})
             ELSE ${e} - interval '30 days' END AS start,
        ${e} AS end
      FROM i`.execute(db);
    const row = rows[0];
    if (!row) throw new Error('no range');
    return row;
  } catch (err) {
    return rethrowUnknownZone(err, tz);
  }
}

export interface EmailCounts {
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

export interface TimeseriesRow extends EmailCounts {
  /** The point's first instant. */
  start: Date;
  /** Day points: the local date (YYYY-MM-DD). */
  day: string | null;
}

const SUMS = sql`
  coalesce(sum(c.sent), 0)::int AS sent, coalesce(sum(c.delivered), 0)::int AS delivered, coalesce(sum(c.opened), 0)::int AS opened,
  coalesce(sum(c.clicked), 0)::int AS clicked, coalesce(sum(c.bounced), 0)::int AS bounced, coalesce(sum(c.complained), 0)::int AS complained`;

/**
 * One point per local hour or day of `tz` touching [start, end), zero-filled; of the project, or
 * of one campaign (`campaignId`: its buckets of migration 0031, `sent` always 0). The 15-minute
 * buckets of the range (and a margin, so that the first and last points are whole) are grouped
 * by their local day, or by their local hour and UTC offset (a repeated hour at the end of
 * summer time is two points); a point starts at its first bucket.
 */
export async function emailTimeseries(
  db: Db,
  input: { projectId: string; start: Date; end: Date; tz: string; interval: 'hour' | 'day'; campaignId?: string },
): Promise<TimeseriesRow[]> {
  const { tz, start, end } = input;
  // One campaign's buckets (migration 0031: no `sent`) or the project's.
  const source =
    input.campaignId === undefined
      ? sql`SELECT bucket, sent, delivered, opened, clicked, bounced, complained FROM analytics_email_counts WHERE project_id = ${input.projectId}`
      : sql`SELECT bucket, 0 AS sent, delivered, opened, clicked, bounced, complained FROM campaign_email_counts
            WHERE campaign_id = ${input.campaignId} AND project_id = ${input.projectId}`;
  const pad = input.interval === 'day' ? sql`interval '2 days'` : sql`interval '2 hours'`;
  const key =
    input.interval === 'day'
      ? sql`g.lt::date AS local_day, NULL::text AS local_hour, NULL::interval AS utc_offset`
      : sql`NULL::date AS local_day, date_trunc('hour', g.lt) AS local_hour, g.lt - (g.q AT TIME ZONE 'UTC') AS utc_offset`;
  try {
    const { rows } = await sql<TimeseriesRow>`
      WITH grid AS (
        SELECT q, q AT TIME ZONE ${tz} AS lt
        FROM generate_series(analytics_bucket(${start}::timestamptz) - ${pad}, ${end}::timestamptz + ${pad}, interval '15 minutes') AS q
      ),
      counts AS (
        SELECT bucket, sum(sent) AS sent, sum(delivered) AS delivered, sum(opened) AS opened, sum(clicked) AS clicked,
               sum(bounced) AS bounced, sum(complained) AS complained
        FROM (${source}) s
        WHERE bucket >= analytics_bucket(${start}::timestamptz) - ${pad} AND bucket <= ${end}::timestamptz + ${pad}
        GROUP BY bucket
      ),
      keyed AS (SELECT g.q, ${key} FROM grid g)
      SELECT min(k.q) AS start, to_char(k.local_day, 'YYYY-MM-DD') AS day, ${SUMS}
      FROM keyed k LEFT JOIN counts c ON c.bucket = k.q
      GROUP BY k.local_day, k.local_hour, k.utc_offset
      HAVING bool_or(k.q + interval '15 minutes' > ${start}::timestamptz AND k.q < ${end}::timestamptz)
      ORDER BY min(k.q)`.execute(db);
    return rows;
  } catch (err) {
    return rethrowUnknownZone(err, tz);
  }
}

export interface EmailTotals extends EmailCounts {
  openedAny: number;
  /** Of the emails sent in the range, how many have each milestone by now. */
  cohort: { delivered: number; opened: number; clicked: number; bounced: number; complained: number };
}

/** Sums over the 15-minute buckets of [start, end) (both on bucket bounds). */
export async function emailTotals(db: Db, input: { projectId: string; start: Date; end: Date }): Promise<EmailTotals> {
  const { rows } = await sql<EmailCounts & { opened_any: number; sd: number; so: number; sc: number; sb: number; sx: number }>`
    SELECT ${SUMS}, coalesce(sum(c.opened_any), 0)::int AS opened_any,
           coalesce(sum(c.sent_delivered), 0)::int AS sd, coalesce(sum(c.sent_opened), 0)::int AS so,
           coalesce(sum(c.sent_clicked), 0)::int AS sc, coalesce(sum(c.sent_bounced), 0)::int AS sb,
           coalesce(sum(c.sent_complained), 0)::int AS sx
    FROM analytics_email_counts c
    WHERE c.project_id = ${input.projectId}
      AND c.bucket >= ${input.start}::timestamptz AND c.bucket < ${input.end}::timestamptz`.execute(db);
  const r = rows[0];
  if (!r) throw new Error('no totals');
  return {
    sent: r.sent,
    delivered: r.delivered,
    opened: r.opened,
    clicked: r.clicked,
    bounced: r.bounced,
    complained: r.complained,
    openedAny: r.opened_any,
    cohort: { delivered: r.sd, opened: r.so, clicked: r.sc, bounced: r.sb, complained: r.sx },
  };
}

/** Tracked events of [start, end), widened to 15-minute buckets (fine buckets and whole UTC days). */
export async function countTrackedEvents(db: Db, input: { projectId: string; start: Date; end: Date }): Promise<number> {
  const rows = await countEventsByName(db, { projectId: input.projectId, periods: [splitRange(input.start, input.end)], limit: null });
  return rows.reduce((n, r) => n + (r.counts[0] ?? 0), 0);
}

const DAY = 86_400_000;
const QUARTER = 900_000;

/** A range as whole UTC days (from the daily rollup) and the 15-minute buckets on either side. */
export interface SplitRange {
  /** [from, to) of 15-minute buckets: one or two parts. */
  fine: [Date, Date][];
  /** [from, to) UTC dates (YYYY-MM-DD), or null when no whole day lies inside. */
  days: [string, string] | null;
}

/** [start, end), widened to 15-minute buckets, as whole UTC days and the buckets around them. */
export function splitRange(start: Date, end: Date): SplitRange {
  const a = Math.floor(start.getTime() / QUARTER) * QUARTER;
  const b = Math.ceil(end.getTime() / QUARTER) * QUARTER;
  const d1 = Math.ceil(a / DAY) * DAY;
  const d2 = Math.floor(b / DAY) * DAY;
  if (d1 >= d2) return { fine: [[new Date(a), new Date(b)]], days: null };
  const iso = (t: number) => new Date(t).toISOString().slice(0, 10);
  return { fine: [[new Date(a), new Date(d1)], [new Date(d2), new Date(b)]], days: [iso(d1), iso(d2)] };
}

/**
 * Tracked-event counts per name over several periods (one column each), the names of the first
 * period with a count above 0, largest first; `limit` null for all.
 */
export async function countEventsByName(
  db: Db,
  input: { projectId: string; periods: SplitRange[]; limit: number | null },
): Promise<{ name: string; counts: number[] }[]> {
  const parts = input.periods.flatMap((p, i) => [
    ...(p.days
      ? [sql`SELECT ${i}::int AS period, name, count FROM analytics_event_daily
             WHERE project_id = ${input.projectId} AND day >= ${p.days[0]}::date AND day < ${p.days[1]}::date`]
      : []),
    ...p.fine.map(
      ([from, to]) => sql`SELECT ${i}::int AS period, name, count FROM analytics_event_counts
                          WHERE project_id = ${input.projectId} AND bucket >= ${from}::timestamptz AND bucket < ${to}::timestamptz`,
    ),
  ]);
  const columns = input.periods.map((_, i) => sql`coalesce(sum(count) FILTER (WHERE period = ${i}), 0)::int`);
  const { rows } = await sql<{ name: string; counts: number[] }>`
    SELECT name, ARRAY[${sql.join(columns)}] AS counts
    FROM (${sql.join(parts, sql` UNION ALL `)}) x
    GROUP BY name
    HAVING coalesce(sum(count) FILTER (WHERE period = 0), 0) > 0
    ORDER BY 2 DESC, name
    ${input.limit === null ? sql`` : sql`LIMIT ${input.limit}`}`.execute(db);
  return rows;
}

export interface CampaignCountRow {
  id: string;
  name: string;
  subject: string;
  status: string;
  sent_at: Date | null;
  sent: number;
  opened: number;
  clicked: number;
}

const METRIC_COLUMN = { opens: sql`k.opened`, clicks: sql`k.clicked`, sent: sql`k.sent` } as const;

/** Campaigns that sent at least one email, by the metric (then by emails sent, newest id). */
export async function topCampaigns(
  db: Db,
  input: { projectId: string; metric: keyof typeof METRIC_COLUMN; limit: number },
): Promise<CampaignCountRow[]> {
  const { rows } = await sql<CampaignCountRow>`
    WITH k AS (
      SELECT campaign_id, sum(sent)::int AS sent, sum(opened)::int AS opened, sum(clicked)::int AS clicked
      FROM analytics_campaign_counts WHERE project_id = ${input.projectId}
      GROUP BY campaign_id HAVING sum(sent) > 0
    )
    SELECT c.id, c.name, c.subject, c.status, c.sent_at, k.sent, k.opened, k.clicked
    FROM k JOIN campaigns c ON c.id = k.campaign_id AND c.project_id = ${input.projectId}
    ORDER BY ${METRIC_COLUMN[input.metric]} DESC, k.sent DESC, c.id DESC
    LIMIT ${input.limit}`.execute(db);
  return rows;
}

export interface CampaignStatsRow {
  by_status: Record<string, number> | null;
  measured: number;
  average_open_rate: number | null;
  average_click_rate: number | null;
}

/** Campaigns per status, and the mean open and click rates of those that sent at least one email. */
export async function campaignStats(db: Db, projectId: string): Promise<CampaignStatsRow> {
  const { rows } = await sql<CampaignStatsRow>`
    SELECT
      (SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*)::int AS n FROM campaigns WHERE project_id = ${projectId} GROUP BY status) s) AS by_status,
      count(*)::int AS measured,
      avg(k.opened::float8 / k.sent) AS average_open_rate,
      avg(k.clicked::float8 / k.sent) AS average_click_rate
    FROM (
      SELECT a.campaign_id, sum(a.sent) AS sent, sum(a.opened) AS opened, sum(a.clicked) AS clicked
      FROM analytics_campaign_counts a JOIN campaigns c ON c.id = a.campaign_id AND c.project_id = ${projectId}
      WHERE a.project_id = ${projectId}
      GROUP BY a.campaign_id HAVING sum(a.sent) > 0
    ) k`.execute(db);
  const row = rows[0];
  if (!row) throw new Error('no campaign stats');
  return row;
}
