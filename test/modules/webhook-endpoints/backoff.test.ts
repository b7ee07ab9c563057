import { describe, expect, it } from 'vitest';
import { baseRetryDelayMs, FIRST_RETRY_MS, MAX_RETRY_DELAY_MS, nextAttemptAt, RETRY_WINDOW_MS } from '../../../src/modules/webhook-endpoints/backoff.js';

/** The retry schedule (docs/webhooks-outgoing.md "Retries"). */
describe('retry schedule', () => {
  it('doubles from 30 s up to 3 hours', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20].map((n) => baseRetryDelayMs(n) / 1000)).toEqual([30, 60, 120, 240, 480, 960, 1920, 3840, 7680, 10800, 10800]);
    expect(MAX_RETRY_DELAY_MS).toBe(3 * 3600 * 1000);
  });

  it('spreads each delay ±25 % (jitter)', () => {
    const createdAt = new Date(0);
    const at = (random: number, n = 1) => (nextAttemptAt({ createdAt, failedAttempts: n, now: 1000, random: () => random })?.getTime() ?? 0) - 1000;
    expect(at(0)).toBe(FIRST_RETRY_MS * 0.75);
    expect(at(0.5)).toBe(FIRST_RETRY_MS);
    expect(at(0.999999)).toBeCloseTo(FIRST_RETRY_MS * 1.25, -1);
    expect(at(0.5, 4)).toBe(FIRST_RETRY_MS * 8);
    const spread = new Set(Array.from({ length: 50 }, () => nextAttemptAt({ createdAt, failedAttempts: 3, now: 0 })?.getTime()));
    expect(spread.size).toBeGreaterThan(40);
  });

  it('keeps trying for 24 hours: the last attempt at the 24-hour mark, then gives up', () => {
    const createdAt = new Date(0);
    const times: number[] = [0];
    for (let n = 1; ; n++) {
      const next = nextAttemptAt({ createdAt, failedAttempts: n, now: times.at(-1) ?? 0, random: () => 0.5 });
      if (!next) break;
      times.push(next.getTime());
    }
    expect(times.at(-1)).toBe(RETRY_WINDOW_MS);
    expect(times).toHaveLength(17);
    expect(nextAttemptAt({ createdAt, failedAttempts: 3, now: RETRY_WINDOW_MS - 1000, random: () => 0.5 })?.getTime()).toBe(RETRY_WINDOW_MS);
  });
});
