/**
 * Per remote address limits of the receiver, in memory (one receiver process holds its own
 * counters; docs/bounces.md "Limits"): fixed one-minute windows, the table bounded.
 */
export interface WindowCounter {
  /** Counts one hit for `key`; false when the key is over `perMinute` in this minute. */
  take(key: string): boolean;
}

const MAX_KEYS = 50_000;

export function windowCounter(perMinute: number, now: () => number = Date.now): WindowCounter {
  let windowStart = 0;
  let counts = new Map<string, number>();
  return {
    take(key) {
      const t = now();
      if (t - windowStart >= 60_000) {
        windowStart = t;
        counts = new Map();
      }
      const n = (counts.get(key) ?? 0) + 1;
      // A flood of distinct addresses cannot grow the table without bound: past MAX_KEYS, new keys share one count.
      const k = counts.size >= MAX_KEYS && !counts.has(key) ? '(overflow)' : key;
      counts.set(k, k === key ? n : (counts.get(k) ?? 0) + 1);
      return (counts.get(k) ?? 0) <= perMinute;
    },
  };
}
