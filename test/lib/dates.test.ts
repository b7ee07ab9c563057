import { describe, expect, it } from 'vitest';
import { parseDate } from '../../src/lib/dates.js';

const iso = (value: unknown, opts?: { httpDate?: boolean }) => parseDate(value, opts)?.toISOString();

describe('parseDate (the one date parser of the API)', () => {
  it('takes a date (midnight UTC) and date-times with Z or an offset', () => {
    expect(iso('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
    expect(iso('2024-01-01T10:00Z')).toBe('2024-01-01T10:00:00.000Z');
    expect(iso('2024-01-01T10:00:00+05:00')).toBe('2024-01-01T05:00:00.000Z');
    expect(iso('2024-01-01T10:00:00-0230')).toBe('2024-01-01T12:30:00.000Z');
    expect(iso('2024-01-01T10:00:00+01')).toBe('2024-01-01T09:00:00.000Z');
    expect(iso('2024-01-01T10:00:00.123456789Z')).toBe('2024-01-01T10:00:00.123Z');
    expect(iso(' 1000-01-01 ')).toBe('1000-01-01T00:00:00.000Z');
  });

  it('refuses what does not exist, what PostgreSQL cannot store, and what each side would read differently', () => {
    for (const bad of [
      '2024-02-30', // JavaScript rolls it to March 1
      '2023-02-29',
      '2024-04-31',
      '2024-13-01',
      '0000-01-01', // PostgreSQL has no year 0
      '0999-12-31',
      '+020000-01-01T00:00:00Z',
      '9999-12-31T23:00:00-05:00', // year 10000 in UTC
      '2024-01-01 (x)', // JavaScript ignores the tail
      '2024-01-01T10:00:00', // no offset: server time zone
      '2024-01-01T24:00:00Z',
      '2024-01-01T10:60:00Z',
      '2024-01-01T10:00:60Z',
      '2024-01-01T10:00:00+15:00',
      '2024-1-1',
      'March 7, 2026',
      'Tue, 01 Dec 2026 09:00:00 GMT', // HTTP form only where asked for
      '',
      1_700_000_000_000,
      null,
      'x'.repeat(100),
    ]) {
      expect(parseDate(bad), String(bad)).toBeUndefined();
    }
  });

  it('with httpDate, also takes the form toUTCString writes, weekday checked', () => {
    const at = new Date('2026-12-01T09:00:00Z');
    expect(iso(at.toUTCString(), { httpDate: true })).toBe(at.toISOString());
    expect(iso('01 Dec 2026 09:00 +0100', { httpDate: true })).toBe('2026-12-01T08:00:00.000Z');
    expect(iso('Wed, 01 Dec 2026 09:00:00 GMT', { httpDate: true })).toBeUndefined(); // 1 Dec 2026 is a Tuesday
    expect(iso('Tue, 31 Nov 2026 09:00:00 GMT', { httpDate: true })).toBeUndefined();
    expect(iso('2024-02-30', { httpDate: true })).toBeUndefined();
  });
});
