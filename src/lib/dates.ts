/**
 * The one parser of dates the API accepts (condition values, campaign `scheduledFor`). Strict:
 * a value is taken only if it names one real instant that PostgreSQL stores and reads back the
 * same way — so `2024-02-30` (JavaScript rolls it to March 1), `0000-01-01` (no year 0 in
 * PostgreSQL), `2024-01-01 (x)` (JavaScript ignores the tail) and a date-time without an offset
 * (read in the server's time zone) are refused instead of stored and failing later.
 *
 * Accepted (docs/conditions.md, "Dates"):
 * - `YYYY-MM-DD`: midnight UTC of that day;
 * - `YYYY-MM-DDTHH:MM[:SS[.fraction]]` followed by `Z` or an offset `±HH:MM` / `±HHMM` / `±HH`
 *   (fraction: 1–9 digits, kept to the millisecond);
 * - with `{ httpDate: true }` (scheduledFor only, where the spec takes what a standard date parser
 *   takes): also the HTTP/RFC 1123 form `Date.prototype.toUTCString()` writes,
 *   `Tue, 01 Dec 2026 09:00:00 GMT` (weekday optional, must match; zone GMT, UTC, Z or ±HHMM).
 * Years 1000–9999 only; month, day (leap years included), hour 0–23, minute and second 0–59;
 * offsets up to ±14:59.
 */
export interface DateOptions {
  httpDate?: boolean;
}

export const MIN_YEAR = 1000;
export const MAX_YEAR = 9999;

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?))?$/;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const HTTP = /^(?:([A-Za-z]{3}),\s*)?(\d{1,2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2})(?::(\d{2}))? (GMT|UTC|Z|[+-]\d{4})$/;

interface Parts {
  year: number;
  month: number; // 1-12
  day: number;
  hour: number;
  minute: number;
  second: number;
  millis: number;
  offsetMinutes: number;
}

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

/** The offset in minutes of `Z`, `±HH`, `±HHMM`, `±HH:MM`, GMT or UTC; undefined when out of range. */
function offsetOf(zone: string): number | undefined {
  if (zone === 'Z' || zone === 'GMT' || zone === 'UTC') return 0;
  const digits = zone.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  if (hours > 14 || minutes > 59) return undefined;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

function toDate(p: Parts): Date | undefined {
  if (p.year < MIN_YEAR || p.year > MAX_YEAR) return undefined;
  if (p.month < 1 || p.month > 12 || p.day < 1 || p.day > daysIn(p.year, p.month)) return undefined;
  if (p.hour > 23 || p.minute > 59 || p.second > 59) return undefined;
  const date = new Date(Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, p.millis) - p.offsetMinutes * 60_000);
  // 9999-12-31T23:00-05:00 is year 10000 in UTC, written "+010000-…" by toISOString.
  const year = date.getUTCFullYear();
  return year >= MIN_YEAR && year <= MAX_YEAR ? date : undefined;
}

function parseIso(s: string): Date | undefined {
  const m = ISO.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, sec, frac, zone] = m;
  // A time needs its offset: without one, PostgreSQL and JavaScript would each pick a zone.
  if (h !== undefined && zone === undefined) return undefined;
  const offsetMinutes = zone === undefined ? 0 : offsetOf(zone);
  if (offsetMinutes === undefined) return undefined;
  return toDate({
    year: Number(y),
    month: Number(mo),
    day: Number(d),
    hour: Number(h ?? 0),
    minute: Number(mi ?? 0),
    second: Number(sec ?? 0),
    millis: frac === undefined ? 0 : Math.floor(Number(`0.${frac}`) * 1000),
    offsetMinutes,
  });
}

function parseHttp(s: string): Date | undefined {
  const m = HTTP.exec(s);
  if (!m) return undefined;
  const [, weekday, d, mon, y, h, mi, sec, zone = 'GMT'] = m;
  const month = MONTHS.indexOf((mon ?? '').toLowerCase()) + 1;
  const offsetMinutes = offsetOf(zone);
  if (month === 0 || offsetMinutes === undefined) return undefined;
  const date = toDate({ year: Number(y), month, day: Number(d), hour: Number(h), minute: Number(mi), second: Number(sec ?? 0), millis: 0, offsetMinutes });
  if (!date || weekday === undefined) return date;
  // The weekday of the local (offset) date must be the one written: a mismatch is a typo.
  const local = new Date(date.getTime() + offsetMinutes * 60_000);
  return WEEKDAYS[local.getUTCDay()] === weekday.toLowerCase() ? date : undefined;
}

/** The instant `value` names, or undefined when it is not a date in an accepted form. */
export function parseDate(value: unknown, opts: DateOptions = {}): Date | undefined {
  if (typeof value !== 'string' || value.length > 64) return undefined;
  const s = value.trim();
  return parseIso(s) ?? (opts.httpDate ? parseHttp(s) : undefined);
}

export const isDate = (value: unknown, opts?: DateOptions): value is string => parseDate(value, opts) !== undefined;

/** What a refused date is told (422 messages, 400 for scheduledFor). */
export const DATE_FORMS_HINT = 'an ISO 8601 date (YYYY-MM-DD) or date-time with Z or an offset (2026-12-01T09:00:00Z), year 1000-9999';
