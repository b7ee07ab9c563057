import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useProject } from '@/app/project';
import { ErrorState } from '@/components/page';
import { Badge } from '@/components/ui/badge';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Skeleton } from '@/components/ui/skeleton';
import { TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { formatNumber, formatRate } from '@/lib/format';
import { TimeAgo } from './parts';

type State = components['schemas']['SecurityState'];
type Level = State['level'];

const levelTone = (l: Level) => (l === 'healthy' ? 'ok' : l === 'warning' ? 'warn' : 'bad');
const levelLabel = (l: Level) => l.charAt(0).toUpperCase() + l.slice(1);

const METRICS: { key: keyof State['metrics']; label: string }[] = [
  { key: 'bounceRate7d', label: 'Bounce rate, 7 days' },
  { key: 'bounceRateAllTime', label: 'Bounce rate, all time' },
  { key: 'complaintRate7d', label: 'Complaint rate, 7 days' },
  { key: 'complaintRateAllTime', label: 'Complaint rate, all time' },
  { key: 'bounces24h', label: 'Bounces, 24 hours' },
  { key: 'bounces7d', label: 'Bounces, 7 days' },
  { key: 'complaints24h', label: 'Complaints, 24 hours' },
  { key: 'complaints7d', label: 'Complaints, 7 days' },
];

/** Rates with two decimals: complaint thresholds are fractions of a percent (0.075 %). */
const rate = (v: number) => (v > 0 && v < 0.01 ? `${(v * 100).toFixed(3)} %` : formatRate(v));
const value = (kind: 'rate' | 'count', v: number) => (kind === 'rate' ? rate(v) : formatNumber(v));

/** The project's bounce and complaint levels (GET /users/@me/projects/:id/security). */
export function SecurityTab() {
  const project = useProject();
  const state = useQuery({
    queryKey: ['users', '@me', 'projects', project.id, 'security'],
    queryFn: () => unwrap(api.GET('/users/@me/projects/{id}/security', { params: { path: { id: project.id } } })),
  });
  if (state.isPending) return <Skeleton className="h-64 w-full" />;
  if (state.error) return <ErrorState error={state.error} onRetry={() => void state.refetch()} />;
  const s = state.data;
  const windows = [
    { label: 'Last 24 hours', w: s.windows.last24h },
    { label: 'Last 7 days', w: s.windows.last7d },
    { label: s.countingSince ? 'Since the last suspension' : 'All time', w: s.windows.allTime },
  ];
  return (
    <div className="grid gap-6">
      <Card>
        <CardHeader>
          <div className="flex items-center gap-3">
            <CardTitle>Sending reputation</CardTitle>
            <Badge tone={levelTone(s.level)}>{levelLabel(s.level)}</Badge>
          </div>
        </CardHeader>
        <CardBody className="grid gap-2 text-fg-muted">
          {s.disabled ? (
            <p role="alert" className="text-bad">
              The project is disabled{s.disabledReason ? `: ${s.disabledReason}` : ''} (<TimeAgo iso={s.disabledAt} />).
            </p>
          ) : null}
          <p>
            Hard bounces and complaints are judged against the thresholds below.{' '}
            {s.autoDisable ? 'At a critical level the project is disabled automatically and its pending emails are cancelled.' : 'On this instance a critical level is reported but does not disable the project.'}
            {s.young ? ' The project is younger than 30 days, so the stricter counts apply.' : ''}
          </p>
          {s.countingSince ? (
            <p>
              Counting since <TimeAgo iso={s.countingSince} /> (the last lifted suspension).
            </p>
          ) : null}
        </CardBody>
      </Card>
      <Table aria-label="Sending windows">
        <THead>
          <tr>
            <TH>Window</TH>
            <TH numeric>Sent</TH>
            <TH numeric>Hard bounces</TH>
            <TH numeric>Bounce rate</TH>
            <TH numeric>Complaints</TH>
            <TH numeric>Complaint rate</TH>
          </tr>
        </THead>
        <TBody>
          {windows.map(({ label, w }) => (
            <TR key={label}>
              <TD>{label}</TD>
              <TD numeric>{formatNumber(w.sent)}</TD>
              <TD numeric>{formatNumber(w.bounces)}</TD>
              <TD numeric>{rate(w.bounceRate)}</TD>
              <TD numeric>{formatNumber(w.complaints)}</TD>
              <TD numeric>{rate(w.complaintRate)}</TD>
            </TR>
          ))}
        </TBody>
      </Table>
      <Table aria-label="Thresholds">
        <THead>
          <tr>
            <TH>Metric</TH>
            <TH numeric>Now</TH>
            <TH numeric>Warning at</TH>
            <TH numeric>Critical at</TH>
            <TH>Level</TH>
          </tr>
        </THead>
        <TBody>
          {METRICS.map(({ key, label }) => {
            const m = s.metrics[key];
            return (
              <TR key={key}>
                <TD>{label}</TD>
                <TD numeric>{value(m.kind, m.value)}</TD>
                <TD numeric>{value(m.kind, m.warning)}</TD>
                <TD numeric>{value(m.kind, m.critical)}</TD>
                <TD>{m.judged ? <Badge tone={levelTone(m.level)}>{levelLabel(m.level)}</Badge> : <span className="text-xs text-fg-muted">Too few emails to judge</span>}</TD>
              </TR>
            );
          })}
        </TBody>
      </Table>
      {s.suspensions.length > 0 ? (
        <section aria-labelledby="suspensions-title" className="grid gap-2">
          <h2 id="suspensions-title" className="text-sm font-semibold">
            Suspensions
          </h2>
          <Table>
            <THead>
              <tr>
                <TH>When</TH>
                <TH>By</TH>
                <TH>Reason</TH>
                <TH>Lifted</TH>
              </tr>
            </THead>
            <TBody>
              {s.suspensions.map((x) => (
                <TR key={x.id}>
                  <TD>
                    <TimeAgo iso={x.createdAt} />
                  </TD>
                  <TD>{x.source === 'AUTOMATIC' ? 'Reputation check' : x.source === 'OPERATOR' ? 'Operator' : 'Billing'}</TD>
                  <TD>{x.reason}</TD>
                  <TD>
                    <TimeAgo iso={x.liftedAt} empty="Not lifted" />
                  </TD>
                </TR>
              ))}
            </TBody>
          </Table>
        </section>
      ) : null}
    </div>
  );
}
