import { describe, expect, it } from 'vitest';
import {
  activityWindow,
  addDays,
  countChange,
  customRangeProblem,
  dateIn,
  daysBetween,
  formatChange,
  formatPoints,
  intervalsFor,
  isIsoDate,
  lastDays,
  localMidnight,
  offsetMs,
  overlay,
  parseList,
  pointLabel,
  previousRange,
  rateChange,
  resolveInterval,
  resolveRange,
  sumSeries,
  toggleInList,
  trendChange,
  type Point,
} from '../../web/src/pages/analytics/insight.js';

const point = (date: string, sent: number, opened = 0): Point => ({ date, sent, delivered: 0, opened, clicked: 0, bounced: 0, complained: 0 });

describe('insight: calendar dates', () => {
  it('checks dates and moves them across months, leap days and years', () => {
    expect(isIsoDate('2024-02-29')).toBe(true);
    expect(isIsoDate('2025-02-29')).toBe(false);
    expect(isIsoDate('2025-6-1')).toBe(false);
    expect(isIsoDate(undefined)).toBe(false);
    expect(addDays('2024-02-28', 1)).toBe('2024-02-29');
    expect(addDays('2025-01-01', -1)).toBe('2024-12-31');
    expect(addDays('2025-03-30', 1)).toBe('2025-03-31');
    expect(daysBetween('2024-12-31', '2025-03-01')).toBe(60);
  });

  it('gives the last N days up to today and the previous period of equal length', () => {
    const r = lastDays('2025-06-30', 30);
    expect(r).toEqual({ startDate: '2025-06-01', endDate: '2025-06-30' });
    expect(previousRange(r)).toEqual({ startDate: '2025-05-02', endDate: '2025-05-31' });
    expect(previousRange({ startDate: '2025-03-01', endDate: '2025-03-07' })).toEqual({ startDate: '2025-02-22', endDate: '2025-02-28' });
    expect(previousRange({ startDate: '2025-03-01', endDate: '2025-03-01' })).toEqual({ startDate: '2025-02-28', endDate: '2025-02-28' });
  });

  it('reads the range of the URL, falling back to 30 days on anything unusable', () => {
    const today = '2025-06-30';
    expect(resolveRange({ range: '7' }, today)).toEqual({ startDate: '2025-06-24', endDate: today, preset: '7', days: 7 });
    expect(resolveRange({}, today)).toMatchObject({ preset: '30', days: 30, startDate: '2025-06-01' });
    expect(resolveRange({ range: '12' }, today)).toMatchObject({ preset: '30' });
    expect(resolveRange({ range: 'custom', from: '2025-05-01', to: '2025-05-10' }, today)).toEqual({ startDate: '2025-05-01', endDate: '2025-05-10', preset: 'custom', days: 10 });
    // Reversed, too long, in the future, or incomplete: not used.
    expect(resolveRange({ range: 'custom', from: '2025-05-10', to: '2025-05-01' }, today).preset).toBe('30');
    expect(resolveRange({ range: 'custom', from: '2024-01-01', to: '2025-06-01' }, today).preset).toBe('30');
    expect(resolveRange({ range: 'custom', from: '2025-07-01', to: '2025-07-02' }, today).preset).toBe('30');
    expect(resolveRange({ range: 'custom', from: '2025-05-01' }, today).preset).toBe('30');
    expect(customRangeProblem('2025-05-10', '2025-05-01', today)).toMatch(/before/);
    expect(customRangeProblem('2024-06-28', '2025-06-29', today)).toMatch(/366/);
    expect(customRangeProblem('2024-06-30', '2025-06-29', today)).toBeUndefined();
  });

  it('offers hourly points only for short ranges', () => {
    expect(intervalsFor(7)).toEqual(['day', 'hour']);
    expect(intervalsFor(8)).toEqual(['day']);
    expect(resolveInterval('hour', 7)).toBe('hour');
    expect(resolveInterval('hour', 30)).toBe('day');
    expect(resolveInterval(undefined, 1)).toBe('day');
  });
});

describe('insight: time zones', () => {
  it('finds local dates, offsets and midnights, also across summer time changes', () => {
    const t = Date.parse('2025-06-30T22:30:00Z');
    expect(dateIn('UTC', t)).toBe('2025-06-30');
    expect(dateIn('Europe/Berlin', t)).toBe('2025-07-01');
    expect(dateIn('America/New_York', t)).toBe('2025-06-30');
    expect(offsetMs('Europe/Berlin', t)).toBe(2 * 3600_000);
    expect(offsetMs('Asia/Kathmandu', t)).toBe(5.75 * 3600_000);
    expect(new Date(localMidnight('2025-07-01', 'Europe/Berlin')).toISOString()).toBe('2025-06-30T22:00:00.000Z');
    expect(new Date(localMidnight('2025-01-15', 'Europe/Berlin')).toISOString()).toBe('2025-01-14T23:00:00.000Z');
    // The days of the changes: midnight is before the change, in the old offset.
    expect(new Date(localMidnight('2025-03-30', 'Europe/Berlin')).toISOString()).toBe('2025-03-29T23:00:00.000Z');
    expect(new Date(localMidnight('2025-10-26', 'Europe/Berlin')).toISOString()).toBe('2025-10-25T22:00:00.000Z');
    expect(new Date(localMidnight('2025-06-01', 'Asia/Kolkata')).toISOString()).toBe('2025-05-31T18:30:00.000Z');
    expect(new Date(localMidnight('2025-06-01', 'America/Los_Angeles')).toISOString()).toBe('2025-06-01T07:00:00.000Z');
    // Santiago skips midnight on 2024-09-08 (00:00 → 01:00): the day starts at 01:00 local.
    expect(dateIn('America/Santiago', localMidnight('2024-09-08', 'America/Santiago'))).toBe('2024-09-08');
  });

  it('turns local dates into the activity feed inclusive window', () => {
    expect(activityWindow('2025-06-01', '2025-06-02', 'Europe/Berlin')).toEqual({ startDate: '2025-05-31T22:00:00.000Z', endDate: '2025-06-02T21:59:59.999Z' });
    expect(activityWindow(undefined, '2025-06-02', 'UTC')).toEqual({ endDate: '2025-06-02T23:59:59.999Z' });
    expect(activityWindow('nonsense', undefined, 'UTC')).toEqual({});
  });

  it('labels day points as dates and hour points in the user zone', () => {
    expect(pointLabel('2025-06-03', 'day', 'Asia/Tokyo', 'en-US')).toBe('Jun 3');
    expect(pointLabel('2025-06-03T12:00:00.000Z', 'hour', 'Asia/Tokyo', 'en-US')).toBe('Jun 3, 21:00');
    expect(pointLabel('2025-06-03T12:00:00.000Z', 'hour', 'UTC', 'en-US')).toBe('Jun 3, 12:00');
  });
});

describe('insight: trends', () => {
  it('computes the percent change of counts, new from zero, nothing from nothing', () => {
    expect(countChange(150, 100)).toEqual({ direction: 'up', percent: 50 });
    expect(countChange(25, 100)).toEqual({ direction: 'down', percent: -75 });
    expect(countChange(1, 3)).toEqual({ direction: 'down', percent: -66.67 });
    expect(countChange(7, 7)).toEqual({ direction: 'flat', percent: 0 });
    expect(countChange(5, 0)).toEqual({ direction: 'new', percent: null });
    expect(countChange(0, 0)).toEqual({ direction: 'none', percent: null });
    expect(formatChange(countChange(150, 100))).toBe('+50 %');
    expect(formatChange(countChange(1, 3))).toBe('−67 %');
    expect(formatChange(countChange(103, 100))).toBe('+3 %');
    expect(formatChange(countChange(1025, 1000))).toBe('+2.5 %');
    expect(formatChange(countChange(5, 0))).toBe('new');
    expect(formatChange(countChange(0, 0))).toBe('');
  });

  it('reads the API trend of top events', () => {
    expect(trendChange(50, 3)).toEqual({ direction: 'up', percent: 50 });
    expect(trendChange(-75, 1)).toEqual({ direction: 'down', percent: -75 });
    expect(trendChange(null, 4)).toEqual({ direction: 'new', percent: null });
  });

  it('compares rates in percentage points, only against a period that sent', () => {
    expect(rateChange(0.25, 0.2, 100)).toEqual({ direction: 'up', points: 5 });
    expect(rateChange(0.2, 0.2351, 100)).toEqual({ direction: 'down', points: -3.5 });
    expect(rateChange(0.3, 0, 0)).toEqual({ direction: 'none', points: null });
    expect(formatPoints(5)).toBe('+5 pts');
    expect(formatPoints(-3.5)).toBe('−3.5 pts');
    expect(formatPoints(null)).toBe('');
  });

  it('sums a series and lays the previous period over the current one by position', () => {
    const current = [point('2025-06-02', 3, 1), point('2025-06-03', 5, 2)];
    const previous = [point('2025-05-31', 1)];
    expect(sumSeries(current, 'sent')).toBe(8);
    expect(sumSeries(current, 'opened')).toBe(3);
    expect(overlay(current, previous, 'sent')).toEqual([
      { date: '2025-06-02', current: 3, previous: 1, previousDate: '2025-05-31' },
      { date: '2025-06-03', current: 5, previous: null, previousDate: null },
    ]);
  });
});

describe('insight: lists in the URL', () => {
  it('parses and toggles comma lists', () => {
    expect(parseList(' email.open,event.tracked,,email.open ')).toEqual(['email.open', 'event.tracked']);
    expect(parseList(undefined)).toEqual([]);
    expect(toggleInList('email.open', 'event.tracked')).toBe('email.open,event.tracked');
    expect(toggleInList('email.open,event.tracked', 'email.open')).toBe('event.tracked');
    expect(toggleInList('email.open', 'email.open')).toBe('');
  });
});
