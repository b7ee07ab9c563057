const numbers = new Intl.NumberFormat();
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** 1234567 → "1,234,567" in the user's locale. */
export const formatNumber = (n: number): string => numbers.format(n);

/** A fraction as a percentage with one decimal: 0.1234 → "12.3 %". */
export const formatRate = (fraction: number): string => `${(fraction * 100).toFixed(1)} %`;

const STEPS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['second', 60],
  ['minute', 60],
  ['hour', 24],
  ['day', 30],
  ['month', 12],
  ['year', Number.POSITIVE_INFINITY],
];

/** "3 minutes ago", "in 2 days": the distance from `now` in its largest unit. */
export function formatRelative(iso: string, now = Date.now()): string {
  let value = (Date.parse(iso) - now) / 1000;
  for (const [unit, size] of STEPS) {
    if (Math.abs(value) < size) return relative.format(Math.round(value), unit);
    value /= size;
  }
  return iso;
}

/** The exact time in the user's time zone (shown on hover beside relative times). */
export const formatDateTime = (iso: string): string => new Date(iso).toLocaleString();
