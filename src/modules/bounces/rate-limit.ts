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

/**
 * The key a remote address is limited under: an IPv4 address itself (IPv4-mapped IPv6 too), an
 * IPv6 address by its /64 (one host usually holds a whole /64: per address it could rotate freely).
 */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1] ?? address;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.toLowerCase().split('%')[0]?.split('::') ?? [];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
