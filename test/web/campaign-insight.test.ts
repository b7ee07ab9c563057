import { describe, expect, it } from 'vitest';
import {
  bounceKind,
  chartInterval,
  chartRows,
  FIRST_PAGE,
  insightPollInterval,
  nextPage,
  pointLabel,
  previousPage,
  seriesTotals,
  shareOfClickers,
} from '../../web/src/pages/campaigns/insight.js';

const point = (date: string, d: number, o: number, c: number) => ({ date, delivered: d, opened: o, clicked: c, bounced: 0, complained: 0 });

describe('campaign insight rules', () => {
  it('charts hourly for the first three days after the start of sending, daily after, daily when never sent', () => {
    const start = '2026-03-01T10:00:00.000Z';
    const t0 = Date.parse(start);
    expect(chartInterval(start, t0 + 3_600_000)).toBe('hour');
    expect(chartInterval(start, t0 + 3 * 86_400_000)).toBe('hour');
    expect(chartInterval(start, t0 + 3 * 86_400_000 + 1)).toBe('day');
    expect(chartInterval(null, t0)).toBe('day');
  });

  it('labels day points by their local date and hour points in the zone', () => {
    expect(pointLabel('2026-03-04', 'day', 'Asia/Kolkata', 'en-US')).toBe('Mar 4');
    expect(pointLabel('2026-03-01T18:30:00.000Z', 'hour', 'Asia/Kolkata', 'en-US')).toBe('Mar 2, 00:00');
    expect(pointLabel('2026-03-01T18:30:00.000Z', 'hour', 'UTC', 'en-US')).toBe('Mar 1, 18:30');
  });

  it('rows, totals and emptiness of the chart', () => {
    const pts = [point('2026-03-01', 2, 1, 0), point('2026-03-02', 0, 0, 0), point('2026-03-03', 1, 3, 2)];
    const { rows, empty } = chartRows(pts, 'day', 'UTC', 'en-US');
    expect(empty).toBe(false);
    expect(rows).toEqual([
      { label: 'Mar 1', delivered: 2, opened: 1, clicked: 0 },
      { label: 'Mar 2', delivered: 0, opened: 0, clicked: 0 },
      { label: 'Mar 3', delivered: 1, opened: 3, clicked: 2 },
    ]);
    expect(seriesTotals(pts)).toEqual({ delivered: 3, opened: 4, clicked: 2 });
    expect(chartRows([point('2026-03-01', 0, 0, 0)], 'day', 'UTC').empty).toBe(true);
    expect(chartRows([], 'day', 'UTC').empty).toBe(true);
  });

  it("a link's share of clickers is of the emails that clicked anything, 0 when none did", () => {
    expect(shareOfClickers(2, 4)).toBe(0.5);
    expect(shareOfClickers(0, 0)).toBe(0);
    expect(shareOfClickers(5, 4)).toBe(1);
  });

  it('polls only while SENDING', () => {
    expect(insightPollInterval('SENDING')).toBe(5000);
    for (const s of ['DRAFT', 'SCHEDULED', 'SENT', 'CANCELLED']) expect(insightPollInterval(s)).toBe(false);
  });

  it('cursor pages go forward and back to the first page', () => {
    const p2 = nextPage(FIRST_PAGE, 'c1');
    const p3 = nextPage(p2, 'c2');
    expect(p3).toEqual({ stack: [undefined, 'c1'], current: 'c2' });
    expect(previousPage(p3)).toEqual(p2);
    expect(previousPage(previousPage(p3))).toEqual(FIRST_PAGE);
    expect(previousPage(FIRST_PAGE)).toEqual(FIRST_PAGE);
  });

  it('names the kind of a bounce or complaint', () => {
    expect(bounceKind({ status: 'BOUNCED', bounceType: 'Permanent', bounceSubType: 'General', reason: 'x' })).toBe('Hard bounce (General)');
    expect(bounceKind({ status: 'BOUNCED', bounceType: null, bounceSubType: null, reason: null })).toBe('Bounce');
    expect(bounceKind({ status: 'COMPLAINED', bounceType: null, bounceSubType: null, reason: 'abuse' })).toBe('Complaint (abuse)');
  });
});
