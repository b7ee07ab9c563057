import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Input, Label, Select } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { SkeletonRows, TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { cn } from '@/lib/cn';
import { formatNumber, formatRate } from '@/lib/format';
import {
  countChange,
  customRangeProblem,
  dateIn,
  formatChange,
  intervalsFor,
  type Interval,
  overlay,
  pointLabel,
  PRESETS,
  previousRange,
  type ResolvedRange,
  resolveInterval,
  resolveRange,
  SERIES_KEYS,
  type SeriesKey,
  sumSeries,
  trendChange,
} from './insight';
import { type Better, TrendBadge } from './parts';

const SERIES: Record<SeriesKey, { label: string; better: Better }> = {
  sent: { label: 'Sent', better: 'up' },
  delivered: { label: 'Delivered', better: 'up' },
  opened: { label: 'Opened', better: 'up' },
  clicked: { label: 'Clicked', better: 'up' },
  bounced: { label: 'Bounced', better: 'down' },
  complained: { label: 'Complaints', better: 'down' },
};
const CAMPAIGN_METRICS = { opens: 'Opens', clicks: 'Clicks', sent: 'Emails sent' } as const;
type CampaignMetric = keyof typeof CAMPAIGN_METRICS;

const segment = 'h-8 px-3 text-xs font-medium first:rounded-l-md last:rounded-r-md border border-border -ml-px first:ml-0 bg-surface hover:bg-muted aria-pressed:bg-muted aria-pressed:text-fg text-fg-muted disabled:opacity-50 disabled:pointer-events-none';

function useAnalyticsParams() {
  const [params, setParams] = useSearchParams();
  const set = (changes: Record<string, string | undefined>) =>
    setParams((current) => {
      const next = new URLSearchParams(current);
      for (const [k, v] of Object.entries(changes)) {
        if (v === undefined || v === '') next.delete(k);
        else next.set(k, v);
      }
      return next;
    });
  return { get: (name: string) => params.get(name) ?? undefined, set };
}

function RangePicker({ range, problem }: { range: ResolvedRange; problem: string | undefined }) {
  const p = useAnalyticsParams();
  const custom = p.get('range') === 'custom';
  return (
    <div className="flex flex-wrap items-end gap-3">
      <div className="grid gap-1.5">
        <span className="text-sm font-medium" id="range-label">
          Range
        </span>
        <div role="group" aria-labelledby="range-label" className="flex">
          {PRESETS.map((days) => (
            <button key={days} type="button" className={segment} aria-pressed={!custom && range.preset === days} onClick={() => p.set({ range: days === '30' ? undefined : days, from: undefined, to: undefined })}>
              {days} days
            </button>
          ))}
          <button type="button" className={segment} aria-pressed={custom} onClick={() => p.set({ range: 'custom', from: p.get('from') ?? range.startDate, to: p.get('to') ?? range.endDate })}>
            Custom
          </button>
        </div>
      </div>
      {custom ? (
        <>
          <div className="grid gap-1.5">
            <Label htmlFor="range-from">From</Label>
            <Input id="range-from" type="date" className="w-40" value={p.get('from') ?? ''} aria-invalid={problem ? true : undefined} onChange={(e) => p.set({ from: e.target.value })} />
          </div>
          <div className="grid gap-1.5">
            <Label htmlFor="range-to">To</Label>
            <Input id="range-to" type="date" className="w-40" value={p.get('to') ?? ''} aria-invalid={problem ? true : undefined} onChange={(e) => p.set({ to: e.target.value })} />
          </div>
        </>
      ) : null}
    </div>
  );
}

function describeRange(range: ResolvedRange): string {
  const f = new Intl.DateTimeFormat(undefined, { timeZone: 'UTC', month: 'short', day: 'numeric', year: 'numeric' });
  const d = (s: string) => f.format(new Date(`${s}T00:00:00Z`));
  return `${d(range.startDate)} – ${d(range.endDate)}`;
}

function TimeSeries({ range, interval, tz }: { range: ResolvedRange; interval: Interval; tz: string }) {
  const project = useProject();
  const p = useAnalyticsParams();
  const metric: SeriesKey = (SERIES_KEYS as string[]).includes(p.get('metric') ?? '') ? (p.get('metric') as SeriesKey) : 'sent';
  const previous = previousRange(range);
  const series = (r: { startDate: string; endDate: string }) => ({
    queryKey: ['analytics', 'timeseries', project.id, r, tz, interval],
    queryFn: () => unwrap(api.GET('/analytics/timeseries', { params: { query: { startDate: r.startDate, endDate: r.endDate, tz, interval } } })),
  });
  const now = useQuery(series(range));
  const before = useQuery(series(previous));
  const error = now.error ?? before.error;
  const intervals = intervalsFor(range.days);
  const data = now.data && before.data ? overlay(now.data.data, before.data.data, metric).map((point) => ({ ...point, label: pointLabel(point.date, interval, tz) })) : [];
  const empty = now.data && before.data && SERIES_KEYS.every((k) => sumSeries(now.data.data, k) === 0 && sumSeries(before.data.data, k) === 0);

  return (
    <Card>
      <CardHeader className="flex-wrap">
        <CardTitle>Email over time</CardTitle>
        <div className="flex items-center gap-2">
          <span className="text-xs text-fg-muted" id="interval-label">
            Per
          </span>
          <div role="group" aria-labelledby="interval-label" className="flex">
            {(['day', 'hour'] as const).map((i) => (
              <button
                key={i}
                type="button"
                className={segment}
                aria-pressed={interval === i}
                disabled={!intervals.includes(i)}
                title={intervals.includes(i) ? undefined : 'Hourly points are shown for ranges of up to 7 days'}
                onClick={() => p.set({ interval: i === 'day' ? undefined : i })}
              >
                {i}
              </button>
            ))}
          </div>
        </div>
      </CardHeader>
      {error ? (
        <CardBody>
          <ErrorState
            error={error}
            onRetry={() => {
              void now.refetch();
              void before.refetch();
            }}
          />
        </CardBody>
      ) : (
        <>
          <div role="group" aria-label="Metric" className="grid grid-cols-2 border-b border-border sm:grid-cols-3 lg:grid-cols-6">
            {SERIES_KEYS.map((key) => {
              const total = now.data ? sumSeries(now.data.data, key) : undefined;
              const change = now.data && before.data ? countChange(sumSeries(now.data.data, key), sumSeries(before.data.data, key)) : undefined;
              return (
                <button
                  key={key}
                  type="button"
                  aria-pressed={metric === key}
                  onClick={() => p.set({ metric: key === 'sent' ? undefined : key })}
                  className={cn('grid gap-0.5 border-border px-4 py-3 text-left hover:bg-muted/60 aria-pressed:bg-muted', 'border-r last:border-r-0')}
                >
                  <span className="text-xs text-fg-muted">{SERIES[key].label}</span>
                  {total === undefined ? <Skeleton className="h-6 w-12" /> : <span className="text-lg font-semibold tabular-nums">{formatNumber(total)}</span>}
                  {change ? <TrendBadge direction={change.direction} text={formatChange(change)} better={SERIES[key].better} against="the previous period" /> : <span className="h-4" />}
                </button>
              );
            })}
          </div>
          <CardBody>
            {now.isPending || before.isPending ? (
              <Skeleton className="h-72 w-full" />
            ) : empty ? (
              <EmptyState
                title="No email in this range"
                description="Sends, deliveries, opens and clicks are charted here once the project sends email."
                action={
                  <Link to={projectPath(project, 'campaigns')} className="text-accent hover:underline">
                    Create a campaign
                  </Link>
                }
              />
            ) : (
              <figure aria-label={`${SERIES[metric].label} per ${interval}, ${describeRange(range)}, with the previous period dashed`}>
                <div className="h-72">
                  <ResponsiveContainer width="100%" height="100%">
                    <LineChart data={data} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
                      <CartesianGrid stroke="var(--color-border)" vertical={false} />
                      <XAxis dataKey="label" tick={{ fill: 'var(--color-fg-muted)', fontSize: 12 }} tickLine={false} axisLine={{ stroke: 'var(--color-border)' }} minTickGap={24} />
                      <YAxis allowDecimals={false} tick={{ fill: 'var(--color-fg-muted)', fontSize: 12 }} tickLine={false} axisLine={false} width={48} tickFormatter={(v: number) => formatNumber(v)} />
                      <Tooltip
                        contentStyle={{ background: 'var(--color-surface)', border: '1px solid var(--color-border)', borderRadius: 6, fontSize: 12 }}
                        labelStyle={{ color: 'var(--color-fg)' }}
                        formatter={(value, name, item) => {
                          const previousDate = (item.payload as { previousDate: string | null }).previousDate;
                          const label = name === 'previous' && previousDate ? `Previous (${pointLabel(previousDate, interval, tz)})` : name === 'previous' ? 'Previous' : 'This period';
                          return [typeof value === 'number' ? formatNumber(value) : String(value), label];
                        }}
                      />
                      <Legend formatter={(name) => (name === 'previous' ? 'Previous period' : 'This period')} wrapperStyle={{ fontSize: 12 }} />
                      <Line type="monotone" dataKey="current" name="current" stroke="var(--color-accent)" strokeWidth={2} dot={false} isAnimationActive={false} />
                      <Line type="monotone" dataKey="previous" name="previous" stroke="var(--color-fg-muted)" strokeWidth={1.5} strokeDasharray="4 4" dot={false} connectNulls isAnimationActive={false} />
                    </LineChart>
                  </ResponsiveContainer>
                </div>
                <figcaption className="mt-2 text-xs text-fg-muted">
                  {describeRange(range)} against {describeRange({ ...previous, preset: 'custom', days: range.days })}, in {tz}. Opens are a person&apos;s first opens (machine opens left out).
                </figcaption>
              </figure>
            )}
          </CardBody>
        </>
      )}
    </Card>
  );
}

function TopCampaigns() {
  const project = useProject();
  const p = useAnalyticsParams();
  const metric: CampaignMetric = (Object.keys(CAMPAIGN_METRICS) as string[]).includes(p.get('by') ?? '') ? (p.get('by') as CampaignMetric) : 'opens';
  const top = useQuery({
    queryKey: ['analytics', 'top-campaigns', project.id, metric],
    queryFn: () => unwrap(api.GET('/analytics/top-campaigns', { params: { query: { metric, limit: 10 } } })),
  });
  return (
    <Card>
      <CardHeader>
        <CardTitle>Top campaigns</CardTitle>
        <div className="flex items-center gap-2">
          <Label htmlFor="campaign-metric" className="text-xs font-normal text-fg-muted">
            By
          </Label>
          <Select id="campaign-metric" className="h-8 w-36" value={metric} onChange={(e) => p.set({ by: e.target.value === 'opens' ? undefined : e.target.value })}>
            {Object.entries(CAMPAIGN_METRICS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </Select>
        </div>
      </CardHeader>
      {top.error ? (
        <CardBody>
          <ErrorState error={top.error} onRetry={() => void top.refetch()} />
        </CardBody>
      ) : top.data?.data.length === 0 ? (
        <CardBody>
          <p className="text-fg-muted">No campaign has sent email yet: the best ones are ranked here, all time.</p>
          <Link to={projectPath(project, 'campaigns')} className="mt-2 inline-block text-accent hover:underline">
            Create a campaign
          </Link>
        </CardBody>
      ) : (
        <div className="p-2">
          <Table aria-label="Top campaigns">
            <THead>
              <tr>
                <TH>Campaign</TH>
                <TH numeric>Sent</TH>
                <TH numeric>Opened</TH>
                <TH numeric>Clicked</TH>
              </tr>
            </THead>
            <TBody>
              {top.isPending ? (
                <SkeletonRows rows={4} columns={4} />
              ) : (
                top.data.data.map((c) => (
                  <TR key={c.id}>
                    <TD className="max-w-64">
                      <Link to={projectPath(project, `campaigns/${c.id}`)} className="block truncate font-medium hover:underline">
                        {c.name}
                      </Link>
                      <span className="block truncate text-xs text-fg-muted">{c.subject}</span>
                    </TD>
                    <TD numeric>{formatNumber(c.sentCount)}</TD>
                    <TD numeric>
                      {formatNumber(c.openedCount)} <span className="text-xs text-fg-muted">{formatRate(c.openRate)}</span>
                    </TD>
                    <TD numeric>
                      {formatNumber(c.clickedCount)} <span className="text-xs text-fg-muted">{formatRate(c.clickRate)}</span>
                    </TD>
                  </TR>
                ))
              )}
            </TBody>
          </Table>
        </div>
      )}
    </Card>
  );
}

const STATUS_DOT = { DRAFT: 'bg-fg-muted', SCHEDULED: 'bg-warn', SENDING: 'bg-accent', SENT: 'bg-ok', CANCELLED: 'bg-border' } as const;

function CampaignStats() {
  const project = useProject();
  const stats = useQuery({ queryKey: ['analytics', 'campaign-stats', project.id], queryFn: () => unwrap(api.GET('/analytics/campaign-stats')) });
  return (
    <Card>
      <CardHeader>
        <CardTitle>Campaigns</CardTitle>
        <span className="text-xs text-fg-muted">all time</span>
      </CardHeader>
      <CardBody>
        {stats.error ? (
          <ErrorState error={stats.error} onRetry={() => void stats.refetch()} />
        ) : stats.isPending ? (
          <div className="grid gap-2" aria-busy="true">
            <Skeleton className="h-6 w-24" />
            <Skeleton className="h-4 w-full" />
          </div>
        ) : (
          <div className="grid gap-4">
            <dl className="grid grid-cols-3 gap-3">
              {[
                ['Total', formatNumber(stats.data.total)],
                ['Active', formatNumber(stats.data.active)],
                ['Completed', formatNumber(stats.data.completed)],
                ['Avg. open rate', formatRate(stats.data.averageOpenRate)],
                ['Avg. click rate', formatRate(stats.data.averageClickRate)],
              ].map(([label, value]) => (
                <div key={label} className="grid gap-0.5">
                  <dt className="text-xs text-fg-muted">{label}</dt>
                  <dd className="text-lg font-semibold tabular-nums">{value}</dd>
                </div>
              ))}
            </dl>
            <ul className="flex flex-wrap gap-x-4 gap-y-1 text-xs" aria-label="Campaigns by state">
              {Object.entries(stats.data.byStatus).map(([status, count]) => (
                <li key={status} className="inline-flex items-center gap-1.5">
                  {/* The state's colour on a dot: the text stays at full contrast. */}
                  <span className={cn('size-2 rounded-full', STATUS_DOT[status as keyof typeof STATUS_DOT] ?? 'bg-fg-muted')} aria-hidden />
                  <span className="text-fg-muted">{status.toLowerCase()}</span>
                  <span className="font-medium tabular-nums">{formatNumber(count)}</span>
                </li>
              ))}
            </ul>
            <p className="text-xs text-fg-muted">Averages are of each campaign&apos;s rates, over the campaigns that sent email.</p>
          </div>
        )}
      </CardBody>
    </Card>
  );
}

function TopEvents({ range, tz }: { range: ResolvedRange; tz: string }) {
  const project = useProject();
  const top = useQuery({
    queryKey: ['analytics', 'top-events', project.id, range.startDate, range.endDate, tz],
    queryFn: () => unwrap(api.GET('/analytics/top-events', { params: { query: { startDate: range.startDate, endDate: range.endDate, tz, limit: 20 } } })),
  });
  return (
    <Card>
      <CardHeader>
        <CardTitle>Top events</CardTitle>
        <span className="text-xs text-fg-muted">against the previous {range.days} days</span>
      </CardHeader>
      {top.error ? (
        <CardBody>
          <ErrorState error={top.error} onRetry={() => void top.refetch()} />
        </CardBody>
      ) : top.data?.data.length === 0 ? (
        <CardBody>
          <p className="text-fg-muted">
            No events were tracked in this range. Send them from your app with <code className="rounded bg-muted px-1">POST /v1/track</code> and the project&apos;s public key.
          </p>
        </CardBody>
      ) : (
        <div className="p-2">
          <Table aria-label="Top events">
            <THead>
              <tr>
                <TH>Event</TH>
                <TH numeric>Count</TH>
                <TH numeric>Previous</TH>
                <TH numeric>Trend</TH>
              </tr>
            </THead>
            <TBody>
              {top.isPending ? (
                <SkeletonRows rows={4} columns={4} />
              ) : (
                top.data.data.map((e) => {
                  const change = trendChange(e.trend, e.count);
                  return (
                    <TR key={e.name}>
                      <TD>
                        <code className="rounded bg-muted px-1 text-xs">{e.name}</code>
                      </TD>
                      <TD numeric>{formatNumber(e.count)}</TD>
                      <TD numeric className="text-fg-muted">
                        {formatNumber(e.previousCount)}
                      </TD>
                      <TD numeric>
                        <TrendBadge direction={change.direction} text={formatChange(change)} better="neither" against={`the previous ${range.days} days`} />
                      </TD>
                    </TR>
                  );
                })
              )}
            </TBody>
          </Table>
        </div>
      )}
    </Card>
  );
}

/** Email over time against the period before, campaigns and tracked events: the range in the URL. */
export function AnalyticsPage() {
  const p = useAnalyticsParams();
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const today = dateIn(tz);
  const range = resolveRange({ range: p.get('range'), from: p.get('from'), to: p.get('to') }, today);
  const problem = p.get('range') === 'custom' ? customRangeProblem(p.get('from'), p.get('to'), today) : undefined;
  const interval = resolveInterval(p.get('interval'), range.days);
  return (
    <>
      <PageHeader title="Analytics" description="How your email and tracked events did over a range, against the period before it." actions={<RangePicker range={range} problem={problem} />} />
      {problem ? (
        <p role="alert" className="mb-4 text-bad">
          {problem} Showing the last 30 days meanwhile.
        </p>
      ) : null}
      <div className="grid gap-6">
        <TimeSeries range={range} interval={interval} tz={tz} />
        <div className="grid gap-6 lg:grid-cols-[minmax(0,3fr)_minmax(0,2fr)]">
          <TopCampaigns />
          <CampaignStats />
        </div>
        <TopEvents range={range} tz={tz} />
      </div>
    </>
  );
}
