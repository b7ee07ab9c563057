import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { ChevronLeft, ChevronRight, ExternalLink } from 'lucide-react';
import { useState } from 'react';
import { Link } from 'react-router';
import { CartesianGrid, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState } from '@/components/page';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Skeleton } from '@/components/ui/skeleton';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { formatDateTime, formatNumber, formatRate, formatRelative } from '@/lib/format';
import { bounceKind, chartInterval, chartRows, FIRST_PAGE, insightPollInterval, nextPage, previousPage, seriesTotals, shareOfClickers } from './insight';
import type { Campaign } from './shared';

/** The campaign page's insight (docs/campaigns.md "Insight"): opens and clicks over time, top links, bounces. */

const browserZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

const LINES = [
  { key: 'delivered', label: 'Delivered', stroke: 'var(--color-fg-muted)', dash: '4 4' },
  { key: 'opened', label: 'Opened', stroke: 'var(--color-accent)', dash: undefined },
  { key: 'clicked', label: 'Clicked', stroke: 'var(--color-fg)', dash: undefined },
] as const;

function OverTime({ c }: { c: Campaign }) {
  const [tz] = useState(browserZone);
  const [now] = useState(() => Date.now());
  const firstSend = c.startedAt ?? c.sentAt;
  const interval = chartInterval(firstSend, now);
  const series = useQuery({
    queryKey: ['campaigns', c.id, 'timeseries', interval, tz],
    queryFn: () => unwrap(api.GET('/campaigns/{id}/stats/timeseries', { params: { path: { id: c.id }, query: { interval, tz } } })),
    refetchInterval: insightPollInterval(c.status),
  });
  const chart = series.data ? chartRows(series.data.data, interval, tz) : undefined;
  const totals = series.data ? seriesTotals(series.data.data) : undefined;
  return (
    <Card>
      <CardHeader>
        <CardTitle>Opens and clicks over time</CardTitle>
        <span className="text-xs text-fg-muted">Per {interval === 'hour' ? 'hour' : 'day'}, {tz}</span>
      </CardHeader>
      <CardBody>
        {series.isError ? (
          <ErrorState error={series.error} onRetry={() => void series.refetch()} />
        ) : !chart || !totals ? (
          <Skeleton className="h-72 w-full" />
        ) : chart.empty ? (
          <EmptyState title="No deliveries, opens or clicks yet" description="They are charted here as the relay confirms deliveries and recipients open and click." />
        ) : (
          <figure aria-label={`Delivered, opened and clicked per ${interval}`} data-testid="campaign-chart">
            <ul className="mb-3 flex flex-wrap gap-x-6 gap-y-1 text-sm" aria-label="Totals">
              {LINES.map((l) => (
                <li key={l.key} className="flex items-center gap-2">
                  <svg width="16" height="4" aria-hidden className="shrink-0">
                    <line x1="0" y1="2" x2="16" y2="2" stroke={l.stroke} strokeWidth="2" strokeDasharray={l.dash} />
                  </svg>
                  <span className="text-fg-muted">{l.label}</span>
                  <strong className="tabular-nums" data-testid={`total-${l.key}`}>
                    {formatNumber(totals[l.key])}
                  </strong>
                </li>
              ))}
            </ul>
            <div className="h-72">
              <ResponsiveContainer width="100%" height="100%">
                <LineChart data={chart.rows} margin={{ top: 8, right: 16, bottom: 0, left: 0 }}>
                  <CartesianGrid stroke="var(--color-border)" vertical={false} />
                  <XAxis dataKey="label" tick={{ fill: 'var(--color-fg-muted)', fontSize: 12 }} tickLine={false} axisLine={{ stroke: 'var(--color-border)' }} minTickGap={24} />
                  <YAxis allowDecimals={false} tick={{ fill: 'var(--color-fg-muted)', fontSize: 12 }} tickLine={false} axisLine={false} width={48} tickFormatter={(v: number) => formatNumber(v)} />
                  <Tooltip
                    contentStyle={{ background: 'var(--color-surface)', border: '1px solid var(--color-border)', borderRadius: 6, fontSize: 12 }}
                    labelStyle={{ color: 'var(--color-fg)' }}
                    formatter={(value, name) => [typeof value === 'number' ? formatNumber(value) : String(value), LINES.find((l) => l.key === name)?.label ?? String(name)]}
                  />
                  {LINES.map((l) => (
                    <Line
                      key={l.key}
                      type="monotone"
                      dataKey={l.key}
                      name={l.key}
                      stroke={l.stroke}
                      strokeWidth={l.key === 'delivered' ? 1.5 : 2}
                      strokeDasharray={l.dash}
                      // A few points (a campaign's first hours) are drawn as dots too: one point makes no line.
                      dot={chart.rows.length <= 48 ? { r: 3, fill: l.stroke } : false}
                      isAnimationActive={false}
                    />
                  ))}
                </LineChart>
              </ResponsiveContainer>
            </div>
            <figcaption className="mt-2 text-xs text-fg-muted">
              Each email counts once per line, when it was first delivered, opened or clicked. Opens are a person&apos;s (machine opens left out); a click counts as an open.
            </figcaption>
          </figure>
        )}
      </CardBody>
    </Card>
  );
}

function TopLinks({ c }: { c: Campaign }) {
  const links = useQuery({
    queryKey: ['campaigns', c.id, 'links'],
    queryFn: () => unwrap(api.GET('/campaigns/{id}/links', { params: { path: { id: c.id }, query: { limit: 20 } } })),
    refetchInterval: insightPollInterval(c.status),
  });
  const d = links.data;
  return (
    <Card>
      <CardHeader>
        <CardTitle>Top links</CardTitle>
        {d ? <span className="text-xs text-fg-muted">{formatNumber(d.clickedEmails)} recipients clicked</span> : null}
      </CardHeader>
      <CardBody>
        {links.isError ? (
          <ErrorState error={links.error} onRetry={() => void links.refetch()} />
        ) : d && d.data.length === 0 ? (
          <EmptyState title="No clicks yet" description="Tracked links of this campaign appear here once recipients click them." />
        ) : (
          <Table aria-label="Top links">
            <THead>
              <tr>
                <TH>URL</TH>
                <TH numeric>Clicks</TH>
                <TH numeric>Unique clicks</TH>
                <TH numeric title="Recipients who clicked this link, of all who clicked any">
                  Share of clickers
                </TH>
              </tr>
            </THead>
            <TBody>
              {!d ? (
                <SkeletonRows rows={3} columns={4} />
              ) : (
                d.data.map((l) => (
                  <TR key={l.url} data-testid="link-row">
                    <TD className="max-w-0 w-full">
                      <a href={l.url} target="_blank" rel="noopener noreferrer" title={l.url} className="inline-flex max-w-full items-center gap-1 text-accent hover:underline">
                        <span className="truncate">{l.url}</span>
                        <ExternalLink className="size-3 shrink-0" aria-hidden />
                      </a>
                    </TD>
                    <TD numeric>{formatNumber(l.clicks)}</TD>
                    <TD numeric>{formatNumber(l.uniqueClicks)}</TD>
                    <TD numeric>{formatRate(shareOfClickers(l.uniqueClicks, d.clickedEmails))}</TD>
                  </TR>
                ))
              )}
            </TBody>
          </Table>
        )}
      </CardBody>
    </Card>
  );
}

const BOUNCES_PER_PAGE = 20;

function Bounces({ c }: { c: Campaign }) {
  const project = useProject();
  const [pages, setPages] = useState(FIRST_PAGE);
  const bounces = useQuery({
    queryKey: ['campaigns', c.id, 'bounces', pages.current ?? ''],
    queryFn: () =>
      unwrap(api.GET('/campaigns/{id}/bounces', { params: { path: { id: c.id }, query: { limit: BOUNCES_PER_PAGE, ...(pages.current && { cursor: pages.current }) } } })),
    placeholderData: keepPreviousData,
    refetchInterval: pages.current === undefined ? insightPollInterval(c.status) : false,
  });
  const d = bounces.data;
  // The total comes with the first page only: while paging, the first page's (still cached).
  const first = useQueryClient().getQueryData<typeof d>(['campaigns', c.id, 'bounces', '']);
  const total = pages.current === undefined && !bounces.isPlaceholderData ? d?.total : first?.total;
  return (
    <Card>
      <CardHeader>
        <CardTitle>Bounces and complaints</CardTitle>
        {total !== undefined ? <span className="text-xs text-fg-muted">{formatNumber(total)} in all</span> : null}
      </CardHeader>
      <CardBody className="grid gap-3">
        {bounces.isError ? (
          <ErrorState error={bounces.error} onRetry={() => void bounces.refetch()} />
        ) : d && d.data.length === 0 && pages.current === undefined ? (
          <EmptyState title="No bounces or complaints" description="Addresses that bounce or complain are listed here, and suppressed from later sends." />
        ) : (
          <>
            <Table aria-label="Bounces">
              <THead>
                <tr>
                  <TH>Contact</TH>
                  <TH>Kind</TH>
                  <TH>Reason</TH>
                  <TH>When</TH>
                </tr>
              </THead>
              <TBody aria-busy={bounces.isFetching}>
                {!d ? (
                  <SkeletonRows rows={3} columns={4} />
                ) : (
                  d.data.map((b) => (
                    <TR key={b.emailId} data-testid="bounce-row">
                      <TD className="max-w-64 truncate">
                        {b.contact ? (
                          <Link to={projectPath(project, `contacts/${b.contact.id}`)} className="text-accent hover:underline">
                            {b.contact.email}
                          </Link>
                        ) : (
                          <span title="The contact was deleted">{b.toEmail}</span>
                        )}
                      </TD>
                      <TD>
                        <Badge tone={b.status === 'COMPLAINED' ? 'warn' : 'bad'} className="whitespace-nowrap">
                          {bounceKind(b)}
                        </Badge>
                      </TD>
                      <TD className="max-w-80 truncate text-fg-muted" title={b.reason ?? undefined}>
                        {b.status === 'BOUNCED' ? (b.reason ?? '—') : '—'}
                      </TD>
                      <TD className="whitespace-nowrap">
                        <time dateTime={b.at} title={formatDateTime(b.at)}>
                          {formatRelative(b.at)}
                        </time>
                      </TD>
                    </TR>
                  ))
                )}
              </TBody>
            </Table>
            {d && (pages.stack.length > 0 || d.hasMore) ? (
              <div className="flex items-center justify-end gap-2">
                <Button variant="secondary" size="sm" disabled={pages.stack.length === 0 || bounces.isFetching} onClick={() => setPages(previousPage(pages))}>
                  <ChevronLeft /> Previous
                </Button>
                <Button variant="secondary" size="sm" disabled={!d.hasMore || !d.cursor || bounces.isFetching} onClick={() => d.cursor && setPages(nextPage(pages, d.cursor))}>
                  Next <ChevronRight />
                </Button>
              </div>
            ) : null}
          </>
        )}
      </CardBody>
    </Card>
  );
}

/** The three insight cards of a campaign that was sent (or is sending). */
export function CampaignInsight({ c }: { c: Campaign }) {
  return (
    <div className="mb-4 grid gap-4">
      <OverTime c={c} />
      <TopLinks c={c} />
      <Bounces c={c} />
    </div>
  );
}
