/**
 * Date ranges, time zones and trends of the Home, Activity and Analytics pages: plain functions
 * (no DOM, no imports) so test/web/insight.test.ts checks them directly.
 *
 * Dates are calendar dates `YYYY-MM-DD` in the user's IANA time zone; the analytics API reads such
 * a date as its local midnight in `tz` and includes an end date (docs/analytics.md "Ranges").
 */

const DAY_MS = 86_400_000;
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The longest range the analytics API accepts. */
export const MAX_RANGE_DAYS = 366;
/** Hourly points are offered up to this many days (7 × 24 = 168 points). */
export const MAX_HOURLY_DAYS = 7;
export const PRESETS = ['7', '30', '90'] as const;
export type Preset = (typeof PRESETS)[number];
export type Interval = 'day' | 'hour';

/** A `YYYY-MM-DD` that is a real calendar date. */
export function isIsoDate(value: string | undefined | null): value is string {
  const m = value ? ISO_DATE.exec(value) : null;
  if (!m) return false;
  const t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return new Date(t).toISOString().slice(0, 10) === value;
}

const dayNumber = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY_MS;
const fromDayNumber = (n: number): string => new Date(n * DAY_MS).toISOString().slice(0, 10);

/** `date` moved by `days` calendar days (negative: back). */
export const addDays = (date: string, days: number): string => fromDayNumber(dayNumber(date) + days);

/** Calendar days from `a` to `b` (b − a). */
export const daysBetween = (a: string, b: string): number => dayNumber(b) - dayNumber(a);

function parts(tz: string, instant: number): Record<string, string> {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone: tz,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  return Object.fromEntries(format.formatToParts(new Date(instant)).map((p) => [p.type, p.value]));
}

/** The local date of an instant in `tz`. */
export function dateIn(tz: string, instant: number = Date.now()): string {
  const p = parts(tz, instant);
  return `${p.year}-${p.month}-${p.day}`;
}

/** The offset of `tz` from UTC at an instant, in milliseconds (Berlin in summer: +7,200,000). */
export function offsetMs(tz: string, instant: number): number {
  const p = parts(tz, instant);
  const asUtc = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** The instant a local date starts in `tz` (its midnight; the first instant of the day where midnight is skipped). */
export function localMidnight(date: string, tz: string): number {
  const guess = dayNumber(date) * DAY_MS;
  const first = guess - offsetMs(tz, guess);
  const second = guess - offsetMs(tz, first);
  return dateIn(tz, second) === date ? second : first;
}

/** A range of whole local days, both ends included. */
export interface DayRange {
  startDate: string;
  endDate: string;
}

export interface ResolvedRange extends DayRange {
  preset: Preset | 'custom';
  days: number;
}

/** The `days` local days up to and including `today`. */
export const lastDays = (today: string, days: number): DayRange => ({ startDate: addDays(today, -(days - 1)), endDate: today });

/** Days in a range, both ends included. */
export const rangeDays = (r: DayRange): number => daysBetween(r.startDate, r.endDate) + 1;

/** The period of equal length that ends the day before `r` starts (the comparison period). */
export function previousRange(r: DayRange): DayRange {
  const days = rangeDays(r);
  return { startDate: addDays(r.startDate, -days), endDate: addDays(r.startDate, -1) };
}

/** Why a custom range cannot be used, or undefined when it can. */
export function customRangeProblem(from: string | undefined, to: string | undefined, today: string): string | undefined {
  if (!isIsoDate(from) || !isIsoDate(to)) return 'Choose a start and an end date.';
  if (daysBetween(from, to) < 0) return 'The end date is before the start date.';
  if (daysBetween(from, to) + 1 > MAX_RANGE_DAYS) return `A range is at most ${MAX_RANGE_DAYS} days.`;
  if (daysBetween(today, from) > 0) return 'The range starts in the future.';
  return undefined;
}

/**
 * The range of the URL's `range` (7, 30, 90 or custom with `from` and `to`); anything unusable
 * falls back to the last 30 days.
 */
export function resolveRange(query: { range?: string | undefined; from?: string | undefined; to?: string | undefined }, today: string): ResolvedRange {
  if (query.range === 'custom' && !customRangeProblem(query.from, query.to, today)) {
    const r = { startDate: query.from as string, endDate: query.to as string };
    return { ...r, preset: 'custom', days: rangeDays(r) };
  }
  const preset: Preset = (PRESETS as readonly string[]).includes(query.range ?? '') ? (query.range as Preset) : '30';
  const days = Number(preset);
  return { ...lastDays(today, days), preset, days };
}

/** The intervals a range may be shown in: hours only for short ranges. */
export const intervalsFor = (days: number): Interval[] => (days <= MAX_HOURLY_DAYS ? ['day', 'hour'] : ['day']);

/** The URL's interval when the range allows it, else days. */
export const resolveInterval = (value: string | undefined, days: number): Interval => (value === 'hour' && intervalsFor(days).includes('hour') ? 'hour' : 'day');

/** The change of a number against the previous period. */
export interface Change {
  direction: 'up' | 'down' | 'flat' | 'new' | 'none';
  /** Percent change (50 = +50 %); null when there is no base (previous 0). */
  percent: number | null;
}

/** Percent change of a count: `new` when it grew from 0, `none` when both are 0. */
export function countChange(current: number, previous: number): Change {
  if (previous === 0) return current === 0 ? { direction: 'none', percent: null } : { direction: 'new', percent: null };
  const percent = Math.round(((current - previous) / previous) * 10_000) / 100;
  return { direction: percent > 0 ? 'up' : percent < 0 ? 'down' : 'flat', percent };
}

/** The API's top-event `trend` (percent, null when the previous count was 0) as a Change. */
export function trendChange(trend: number | null, count: number): Change {
  if (trend === null) return count > 0 ? { direction: 'new', percent: null } : { direction: 'none', percent: null };
  return { direction: trend > 0 ? 'up' : trend < 0 ? 'down' : 'flat', percent: trend };
}

/**
 * The change of a rate (fractions, 0.25 = 25 %) in percentage points, one decimal; `none` when the
 * previous period sent nothing (its rate is no base).
 */
export function rateChange(current: number, previous: number, previousBase: number): { direction: Change['direction']; points: number | null } {
  if (previousBase === 0) return { direction: 'none', points: null };
  const points = Math.round((current - previous) * 1000) / 10;
  return { direction: points > 0 ? 'up' : points < 0 ? 'down' : 'flat', points };
}

/** "+12.5 %", "−3 %", "new", "" (no base): the text of a Change. */
export function formatChange(change: Change): string {
  if (change.direction === 'new') return 'new';
  if (change.percent === null) return '';
  if (change.percent === 0) return '0 %';
  return `${change.percent > 0 ? '+' : '−'}${formatDecimal(Math.abs(change.percent))} %`;
}

/** "+1.2 pts", "−0.4 pts", "" without a base. */
export function formatPoints(points: number | null): string {
  if (points === null) return '';
  if (points === 0) return '0 pts';
  return `${points > 0 ? '+' : '−'}${formatDecimal(Math.abs(points))} pts`;
}

const formatDecimal = (n: number): string => (Number.isInteger(n) ? String(n) : n.toFixed(n >= 10 ? 0 : 1));

export type SeriesKey = 'sent' | 'delivered' | 'opened' | 'clicked' | 'bounced' | 'complained';
export const SERIES_KEYS: SeriesKey[] = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'];
export type Point = { date: string } & Record<SeriesKey, number>;

/** Sum of one number over the points of a series. */
export const sumSeries = (points: readonly Point[], key: SeriesKey): number => points.reduce((total, p) => total + p[key], 0);

export interface OverlayPoint {
  date: string;
  current: number;
  /** The same position in the previous period (null where it has fewer points, e.g. a DST day). */
  previous: number | null;
  previousDate: string | null;
}

/** The previous period's points laid over the current ones by position (day 1 over day 1…). */
export function overlay(current: readonly Point[], previous: readonly Point[], key: SeriesKey): OverlayPoint[] {
  return current.map((p, i) => {
    const before = previous[i];
    return { date: p.date, current: p[key], previous: before ? before[key] : null, previousDate: before ? before.date : null };
  });
}

/** The label of a point: a day (`2025-06-03` → "Jun 3") or an hour instant shown in `tz` ("Jun 3, 14:00"). */
export function pointLabel(date: string, interval: Interval, tz: string, locale?: string): string {
  if (interval === 'day') {
    return new Intl.DateTimeFormat(locale, { timeZone: 'UTC', month: 'short', day: 'numeric' }).format(new Date(`${date}T00:00:00Z`));
  }
  return new Intl.DateTimeFormat(locale, { timeZone: tz, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(date));
}

/**
 * The activity feed's window for local dates (docs/activity.md: both ends inclusive, a bare date
 * is midnight UTC): the start's local midnight, and the last millisecond of the end's local day,
 * as ISO instants.
 */
export function activityWindow(startDate: string | undefined, endDate: string | undefined, tz: string): { startDate?: string; endDate?: string } {
  const window: { startDate?: string; endDate?: string } = {};
  if (isIsoDate(startDate)) window.startDate = new Date(localMidnight(startDate, tz)).toISOString();
  if (isIsoDate(endDate)) window.endDate = new Date(localMidnight(addDays(endDate, 1), tz) - 1).toISOString();
  return window;
}

/** A comma list of the URL (`types=a,b`) as a sorted set without blanks or repeats. */
export function parseList(value: string | undefined): string[] {
  if (!value) return [];
  return [...new Set(value.split(',').map((s) => s.trim()).filter(Boolean))].sort();
}

/** A list toggled: `item` added or removed, the result as the URL's comma list ('' when empty). */
export function toggleInList(value: string | undefined, item: string): string {
  const list = parseList(value);
  return (list.includes(item) ? list.filter((i) => i !== item) : [...list, item].sort()).join(',');
}
