/**
 * The reputation rules (docs/security.md): which numbers make a project's deliverability
 * `warning` or `critical`. A level is reached AT its threshold (≥). Rates are judged only from a
 * minimum number of emails sent in their window; counts always.
 */

export const LEVELS = ['healthy', 'warning', 'critical'] as const;
export type Level = (typeof LEVELS)[number];

/** Sends, hard bounces and complaints counted over one window. */
export interface WindowCounts {
  sent: number;
  bounced: number;
  complained: number;
}

export interface ReputationCounts {
  last24h: WindowCounts;
  last7d: WindowCounts;
  allTime: WindowCounts;
}

/** A project younger than this is judged by the stricter absolute counts. */
export const YOUNG_PROJECT_DAYS = 30;

/** Below this many emails sent in the window a bounce rate is not judged (one bounce in 10 is noise). */
export const MIN_SENT_FOR_BOUNCE_RATE = 100;
/**
 * Below this many emails sent in the window a complaint rate is not judged: under 667 emails a
 * single complaint is already above the 0.15% critical rate. The absolute counts cover small volumes.
 */
export const MIN_SENT_FOR_COMPLAINT_RATE = 1000;

interface Threshold {
  warning: number;
  critical: number;
}

/** Rates as fractions (0.05 = 5%). */
export const RATE_THRESHOLDS = {
  bounceRate7d: { warning: 0.05, critical: 0.1 },
  bounceRateAllTime: { warning: 0.04, critical: 0.08 },
  complaintRate7d: { warning: 0.00075, critical: 0.0015 },
  complaintRateAllTime: { warning: 0.0003, critical: 0.0012 },
} as const satisfies Record<string, Threshold>;

/** Absolute counts; projects younger than YOUNG_PROJECT_DAYS get the `young` numbers. */
export const COUNT_THRESHOLDS = {
  bounces24h: { young: { warning: 50, critical: 200 }, established: { warning: 1000, critical: 5000 } },
  bounces7d: { young: { warning: 150, critical: 500 }, established: { warning: 5000, critical: 20000 } },
  complaints24h: { young: { warning: 3, critical: 10 }, established: { warning: 50, critical: 250 } },
  complaints7d: { young: { warning: 10, critical: 25 }, established: { warning: 200, critical: 1000 } },
} as const satisfies Record<string, { young: Threshold; established: Threshold }>;

export type MetricName = keyof typeof RATE_THRESHOLDS | keyof typeof COUNT_THRESHOLDS;

export interface Metric {
  /** A rate (fraction of the window's sent emails) or a count. */
  kind: 'rate' | 'count';
  value: number;
  warning: number;
  critical: number;
  /** False when the window has too few emails to judge the rate (its level is then healthy). */
  judged: boolean;
  level: Level;
}

const rank: Record<Level, number> = { healthy: 0, warning: 1, critical: 2 };

function levelOf(value: number, t: Threshold): Level {
  return value >= t.critical ? 'critical' : value >= t.warning ? 'warning' : 'healthy';
}

function rateMetric(part: number, sent: number, minSent: number, t: Threshold): Metric {
  const value = sent > 0 ? part / sent : 0;
  const judged = sent >= minSent;
  return { kind: 'rate', value, warning: t.warning, critical: t.critical, judged, level: judged ? levelOf(value, t) : 'healthy' };
}

function countMetric(value: number, t: Threshold): Metric {
  return { kind: 'count', value, warning: t.warning, critical: t.critical, judged: true, level: levelOf(value, t) };
}

export interface Assessment {
  metrics: Record<MetricName, Metric>;
  /** The worst metric's level. */
  level: Level;
  /** The metrics at critical, worst first by how far past their threshold (value / critical). */
  critical: MetricName[];
}

/** The one judgement of a project's reputation: every metric's level and the overall one. */
export function assessReputation(counts: ReputationCounts, opts: { young: boolean }): Assessment {
  const age = opts.young ? 'young' : 'established';
  const { last24h, last7d, allTime } = counts;
  const metrics: Record<MetricName, Metric> = {
    bounceRate7d: rateMetric(last7d.bounced, last7d.sent, MIN_SENT_FOR_BOUNCE_RATE, RATE_THRESHOLDS.bounceRate7d),
    bounceRateAllTime: rateMetric(allTime.bounced, allTime.sent, MIN_SENT_FOR_BOUNCE_RATE, RATE_THRESHOLDS.bounceRateAllTime),
    complaintRate7d: rateMetric(last7d.complained, last7d.sent, MIN_SENT_FOR_COMPLAINT_RATE, RATE_THRESHOLDS.complaintRate7d),
    complaintRateAllTime: rateMetric(allTime.complained, allTime.sent, MIN_SENT_FOR_COMPLAINT_RATE, RATE_THRESHOLDS.complaintRateAllTime),
    bounces24h: countMetric(last24h.bounced, COUNT_THRESHOLDS.bounces24h[age]),
    bounces7d: countMetric(last7d.bounced, COUNT_THRESHOLDS.bounces7d[age]),
    complaints24h: countMetric(last24h.complained, COUNT_THRESHOLDS.complaints24h[age]),
    complaints7d: countMetric(last7d.complained, COUNT_THRESHOLDS.complaints7d[age]),
  };
  const entries = Object.entries(metrics) as [MetricName, Metric][];
  const level = entries.reduce<Level>((worst, [, m]) => (rank[m.level] > rank[worst] ? m.level : worst), 'healthy');
  const critical = entries
    .filter(([, m]) => m.level === 'critical')
    .sort(([, a], [, b]) => b.value / b.critical - a.value / a.critical)
    .map(([name]) => name);
  return { metrics, level, critical };
}

const percent = (v: number) => `${(v * 100).toFixed(v < 0.01 ? 3 : 2).replace(/\.?0+$/, '')}%`;

/** "bounce rate over 7 days 10% ≥ 10% (10 of 100 emails)": why a metric is critical, for people. */
export function describeMetric(name: MetricName, metric: Metric, counts: ReputationCounts): string {
  const label: Record<MetricName, string> = {
    bounceRate7d: 'bounce rate over 7 days',
    bounceRateAllTime: 'all-time bounce rate',
    complaintRate7d: 'complaint rate over 7 days',
    complaintRateAllTime: 'all-time complaint rate',
    bounces24h: 'hard bounces in 24 hours',
    bounces7d: 'hard bounces in 7 days',
    complaints24h: 'complaints in 24 hours',
    complaints7d: 'complaints in 7 days',
  };
  if (metric.kind === 'count') return `${label[name]}: ${metric.value} ≥ ${metric.critical}`;
  const window = name.endsWith('7d') ? counts.last7d : counts.allTime;
  const part = name.startsWith('bounce') ? window.bounced : window.complained;
  return `${label[name]} ${percent(metric.value)} ≥ ${percent(metric.critical)} (${part} of ${window.sent} emails)`;
}
