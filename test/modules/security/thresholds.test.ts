import { describe, expect, it } from 'vitest';
import { assessReputation, type ReputationCounts } from '../../../src/modules/security/thresholds.js';

const zero = { sent: 0, bounced: 0, complained: 0 };
const counts = (c: Partial<ReputationCounts>): ReputationCounts => ({ last24h: zero, last7d: zero, allTime: zero, ...c });
const level = (c: Partial<ReputationCounts>, metric: string, young = false) =>
  (assessReputation(counts(c), { young }).metrics as Record<string, { level: string }>)[metric]?.level;

describe('reputation thresholds (a level is reached at its threshold)', () => {
  it.each([
    // 7-day bounce rate 5% / 10% with ≥ 100 emails (all-time kept healthy with a large history)
    ['bounceRate7d', { last7d: { sent: 1000, bounced: 49, complained: 0 } }, 'healthy'],
    ['bounceRate7d', { last7d: { sent: 1000, bounced: 50, complained: 0 } }, 'warning'],
    ['bounceRate7d', { last7d: { sent: 1000, bounced: 99, complained: 0 } }, 'warning'],
    ['bounceRate7d', { last7d: { sent: 1000, bounced: 100, complained: 0 } }, 'critical'],
    ['bounceRate7d', { last7d: { sent: 99, bounced: 50, complained: 0 } }, 'healthy'],
    // all-time bounce rate 4% / 8%
    ['bounceRateAllTime', { allTime: { sent: 10000, bounced: 399, complained: 0 } }, 'healthy'],
    ['bounceRateAllTime', { allTime: { sent: 10000, bounced: 400, complained: 0 } }, 'warning'],
    ['bounceRateAllTime', { allTime: { sent: 10000, bounced: 799, complained: 0 } }, 'warning'],
    ['bounceRateAllTime', { allTime: { sent: 10000, bounced: 800, complained: 0 } }, 'critical'],
    // 7-day complaint rate 0.075% / 0.15% (judged from 1,000 emails)
    ['complaintRate7d', { last7d: { sent: 40000, bounced: 0, complained: 29 } }, 'healthy'],
    ['complaintRate7d', { last7d: { sent: 40000, bounced: 0, complained: 30 } }, 'warning'],
    ['complaintRate7d', { last7d: { sent: 40000, bounced: 0, complained: 59 } }, 'warning'],
    ['complaintRate7d', { last7d: { sent: 40000, bounced: 0, complained: 60 } }, 'critical'],
    ['complaintRate7d', { last7d: { sent: 999, bounced: 0, complained: 5 } }, 'healthy'],
    // all-time complaint rate 0.03% / 0.12%
    ['complaintRateAllTime', { allTime: { sent: 100000, bounced: 0, complained: 29 } }, 'healthy'],
    ['complaintRateAllTime', { allTime: { sent: 100000, bounced: 0, complained: 30 } }, 'warning'],
    ['complaintRateAllTime', { allTime: { sent: 100000, bounced: 0, complained: 119 } }, 'warning'],
    ['complaintRateAllTime', { allTime: { sent: 100000, bounced: 0, complained: 120 } }, 'critical'],
  ] as const)('%s with %j is %s', (metric, c, expected) => {
    expect(level(c, metric)).toBe(expected);
  });

  it.each([
    // [metric, window, field, young warning, young critical, established warning, established critical]
    ['bounces24h', 'last24h', 'bounced', 50, 200, 1000, 5000],
    ['bounces7d', 'last7d', 'bounced', 150, 500, 5000, 20000],
    ['complaints24h', 'last24h', 'complained', 3, 10, 50, 250],
    ['complaints7d', 'last7d', 'complained', 10, 25, 200, 1000],
  ] as const)('%s: stricter for projects younger than 30 days', (metric, window, field, yw, yc, ew, ec) => {
    const at = (n: number, young: boolean) => level({ [window]: { ...zero, [field]: n } }, metric, young);
    expect([at(yw - 1, true), at(yw, true), at(yc - 1, true), at(yc, true)]).toEqual(['healthy', 'warning', 'warning', 'critical']);
    expect([at(ew - 1, false), at(ew, false), at(ec - 1, false), at(ec, false)]).toEqual(['healthy', 'warning', 'warning', 'critical']);
    expect(at(yc, false)).toBe(yc >= ew ? 'warning' : 'healthy');
  });

  it('reports the worst level and lists critical metrics worst first', () => {
    const a = assessReputation(counts({ last7d: { sent: 1000, bounced: 300, complained: 0 }, allTime: { sent: 1000, bounced: 300, complained: 0 } }), { young: false });
    expect(a.level).toBe('critical');
    expect(a.critical).toEqual(['bounceRateAllTime', 'bounceRate7d']);
    expect(assessReputation(counts({}), { young: true }).level).toBe('healthy');
  });
});
