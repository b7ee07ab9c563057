/**
 * Pure rules of the campaign page's insight (no imports): which interval the chart asks for,
 * the chart's points and labels, each link's share of clickers, when the insight refreshes,
 * the bounce list's pages. Unit-tested in test/web/campaign-insight.test.ts.
 */

export type Interval = 'hour' | 'day';

/** Hourly points while the campaign is at most this old (from its first send to now): the first three days. */
export const HOURLY_FOR_MS = 3 * 86_400_000;

/**
 * Hourly for the first three days after the first send (opens and clicks come mostly then, and
 * 72 points still read well), daily after that. A campaign not yet sent: daily.
 */
export function chartInterval(firstSend: string | null, now: number): Interval {
  if (!firstSend) return 'day';
  return now - Date.parse(firstSend) <= HOURLY_FOR_MS ? 'hour' : 'day';
}

export interface SeriesPoint {
  date: string;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

/** A point's label: a day point's local date (YYYY-MM-DD, already in the zone), an hour point's instant in `tz`. */
export function pointLabel(date: string, interval: Interval, tz: string, locale?: string): string {
  if (interval === 'day') {
    return new Intl.DateTimeFormat(locale, { timeZone: 'UTC', month: 'short', day: 'numeric' }).format(new Date(`${date}T00:00:00Z`));
  }
  return new Intl.DateTimeFormat(locale, { timeZone: tz, month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(date));
}

/** The chart's rows (label plus the three lines) and whether there is anything to draw. */
export function chartRows(points: readonly SeriesPoint[], interval: Interval, tz: string, locale?: string) {
  const rows = points.map((p) => ({ label: pointLabel(p.date, interval, tz, locale), delivered: p.delivered, opened: p.opened, clicked: p.clicked }));
  const empty = points.every((p) => p.delivered === 0 && p.opened === 0 && p.clicked === 0);
  return { rows, empty };
}

/** Sums of the series (the chart's legend totals). */
export function seriesTotals(points: readonly SeriesPoint[]): { delivered: number; opened: number; clicked: number } {
  return points.reduce((t, p) => ({ delivered: t.delivered + p.delivered, opened: t.opened + p.opened, clicked: t.clicked + p.clicked }), { delivered: 0, opened: 0, clicked: 0 });
}

/** A link's share of clickers: the emails that clicked it of the emails that clicked anything (0..1; 0 when none did). */
export const shareOfClickers = (uniqueClicks: number, clickedEmails: number): number => (clickedEmails > 0 ? Math.min(1, uniqueClicks / clickedEmails) : 0);

/** The insight refreshes only while the campaign is SENDING (every 5 s); otherwise on load and focus. */
export const insightPollInterval = (status: string): number | false => (status === 'SENDING' ? 5000 : false);

/**
 * The bounce list's cursor pages: `stack` holds the cursors of the pages before the current
 * one (the first page's is undefined). Next pushes the current page's cursor, Previous pops.
 */
export interface CursorPages {
  stack: (string | undefined)[];
  current: string | undefined;
}

export const FIRST_PAGE: CursorPages = { stack: [], current: undefined };

export const nextPage = (p: CursorPages, cursor: string): CursorPages => ({ stack: [...p.stack, p.current], current: cursor });

export function previousPage(p: CursorPages): CursorPages {
  if (p.stack.length === 0) return p;
  return { stack: p.stack.slice(0, -1), current: p.stack[p.stack.length - 1] };
}

/** A bounce's kind in words: "Hard bounce (General)", "Complaint (abuse)". */
export function bounceKind(b: { status: 'BOUNCED' | 'COMPLAINED'; bounceType: string | null; bounceSubType: string | null; reason: string | null }): string {
  if (b.status === 'COMPLAINED') return b.reason ? `Complaint (${b.reason})` : 'Complaint';
  const type = b.bounceType === 'Permanent' ? 'Hard bounce' : b.bounceType ? `${b.bounceType} bounce` : 'Bounce';
  return b.bounceSubType ? `${type} (${b.bounceSubType})` : type;
}
