import { useQuery } from '@tanstack/react-query';
import { ArrowRight, CheckCircle2, Circle } from 'lucide-react';
import { useEffect, useRef } from 'react';
import { Link } from 'react-router';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { ErrorState, PageHeader } from '@/components/page';
import { buttonVariants } from '@/components/ui/button';
import { Card, CardHeader, CardTitle } from '@/components/ui/card';
import { Skeleton } from '@/components/ui/skeleton';
import { cn } from '@/lib/cn';
import { formatNumber, formatRate } from '@/lib/format';
import { ActivityRow, ActivitySkeleton } from '../activity/feed';
import { countChange, dateIn, formatChange, formatPoints, lastDays, previousRange, rateChange } from '../analytics/insight';
import { type Better, StatCard, TrendBadge } from '../analytics/parts';

const PERIOD_DAYS = 30;
const RECENT_MINUTES = 60;
const LATEST = 10;

type SetupState = components['schemas']['SetupState'];
type Stats = components['schemas']['ActivityStats'];

interface Step {
  key: string;
  title: string;
  done: boolean;
  detail: string;
  path: string;
  action: string;
}

function steps(s: SetupState, pendingDomain: string | undefined): Step[] {
  const contacts = `${s.contactCountCapped ? 'More than ' : ''}${formatNumber(s.contactCount)} ${s.contactCount === 1 ? 'contact' : 'contacts'}`;
  const templates = `${s.templateCountCapped ? 'More than ' : ''}${formatNumber(s.templateCount)} ${s.templateCount === 1 ? 'template' : 'templates'}`;
  return [
    {
      key: 'domain',
      title: 'Add a domain and verify it',
      done: s.hasVerifiedDomain,
      detail: s.hasVerifiedDomain
        ? 'A verified domain signs your mail.'
        : pendingDomain
          ? `${pendingDomain} is waiting for its DNS records to be verified.`
          : 'Mail is sent from an address of a domain whose DNS records you add.',
      path: 'domains',
      action: pendingDomain ? 'Verify the domain' : 'Add a domain',
    },
    {
      key: 'contacts',
      title: 'Import contacts',
      done: s.contactCount > 0,
      detail: s.contactCount > 0 ? contacts : 'Upload a CSV or add contacts through the API.',
      path: 'contacts',
      action: 'Import contacts',
    },
    {
      key: 'template',
      title: 'Create a template',
      done: s.templateCount > 0,
      detail: s.templateCount > 0 ? templates : 'The HTML your campaigns and workflows send.',
      path: 'templates',
      action: 'Create a template',
    },
    {
      key: 'send',
      title: 'Send a first email',
      done: s.hasSentEmail,
      detail: s.hasSentEmail ? 'Your project has sent email.' : 'A campaign to your contacts, or a test send to yourself.',
      path: 'campaigns',
      action: 'Create a campaign',
    },
  ];
}

function Checklist() {
  const project = useProject();
  const setup = useQuery({
    queryKey: ['projects', project.id, 'setup-state'],
    queryFn: () => unwrap(api.GET('/projects/{id}/setup-state', { params: { path: { id: project.id } } })),
  });
  const domains = useQuery({
    queryKey: ['domains', project.id],
    queryFn: () => unwrap(api.GET('/domains/project/{projectId}', { params: { path: { projectId: project.id } } })),
    enabled: setup.data?.hasVerifiedDomain === false,
  });
  if (setup.error) return <ErrorState error={setup.error} onRetry={() => void setup.refetch()} />;
  if (setup.isPending) {
    return (
      <Card aria-busy="true" className="grid gap-3 p-4">
        <Skeleton className="h-5 w-48" />
        <Skeleton className="h-4 w-full" />
        <Skeleton className="h-4 w-full" />
      </Card>
    );
  }
  const list = steps(setup.data, domains.data?.find((d) => !d.verified)?.domain);
  const done = list.filter((s) => s.done).length;
  if (done === list.length) return null;
  return (
    <Card>
      <CardHeader>
        <CardTitle id="setup-title">Get set up</CardTitle>
        <span className="text-xs text-fg-muted" data-testid="setup-progress">
          {done} of {list.length} done
        </span>
      </CardHeader>
      <div className="px-4 pt-3">
        <div className="h-1.5 overflow-hidden rounded-full bg-muted" role="progressbar" aria-valuemin={0} aria-valuemax={list.length} aria-valuenow={done} aria-labelledby="setup-title">
          <div className="h-full rounded-full bg-accent transition-[width]" style={{ width: `${(done / list.length) * 100}%` }} />
        </div>
      </div>
      <ol className="divide-y divide-border" aria-labelledby="setup-title">
        {list.map((step) => (
          <li key={step.key} className="flex items-center gap-3 px-4 py-3" data-step={step.key} data-done={step.done}>
            {step.done ? <CheckCircle2 className="size-5 shrink-0 text-ok" aria-hidden /> : <Circle className="size-5 shrink-0 text-fg-muted" aria-hidden />}
            <div className="grid min-w-0 flex-1 gap-0.5">
              <span className={cn('font-medium', step.done && 'text-fg-muted line-through')}>
                {step.title}
                <span className="sr-only">{step.done ? ' (done)' : ' (to do)'}</span>
              </span>
              <span className="text-xs text-fg-muted">{step.detail}</span>
            </div>
            {step.done ? null : (
              <Link to={projectPath(project, step.path)} className={buttonVariants({ variant: 'secondary', size: 'sm' })}>
                {step.action} <ArrowRight aria-hidden />
              </Link>
            )}
          </li>
        ))}
      </ol>
    </Card>
  );
}

function rateTrend(current: Stats | undefined, previous: Stats | undefined, key: 'deliveryRate' | 'openRate' | 'clickRate' | 'bounceRate', better: Better, against: string) {
  if (!current || !previous || current.sent === 0) return null;
  const change = rateChange(current[key], previous[key], previous.sent);
  return <TrendBadge direction={change.direction} text={formatPoints(change.points)} better={better} against={against} />;
}

function countTrend(current: number | undefined, previous: number | undefined, against: string) {
  if (current === undefined || previous === undefined) return null;
  const change = countChange(current, previous);
  return <TrendBadge direction={change.direction} text={formatChange(change)} against={against} />;
}

function StatsSection() {
  const project = useProject();
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const current = lastDays(dateIn(tz), PERIOD_DAYS);
  const previous = previousRange(current);
  const stats = (range: { startDate: string; endDate: string }) => ({
    queryKey: ['analytics', 'stats', project.id, range, tz],
    queryFn: () => unwrap(api.GET('/activity/stats', { params: { query: { ...range, tz } } })),
  });
  const now = useQuery(stats(current));
  const before = useQuery(stats(previous));
  const error = now.error ?? before.error;
  if (error) {
    return (
      <ErrorState
        error={error}
        onRetry={() => {
          void now.refetch();
          void before.refetch();
        }}
      />
    );
  }
  const loading = now.isPending || before.isPending;
  const c = now.data;
  const p = before.data;
  const against = `the previous ${PERIOD_DAYS} days`;
  // A rate of nothing sent is no rate: a dash, and why.
  const sentHint = c ? (c.sent === 0 ? 'nothing sent in this period' : `of ${formatNumber(c.sent)} sent`) : undefined;
  const rate = (key: 'deliveryRate' | 'openRate' | 'clickRate' | 'bounceRate') => (c ? (c.sent === 0 ? '—' : formatRate(c[key])) : '');
  return (
    <section aria-labelledby="stats-title" className="grid gap-3">
      <div className="flex items-baseline justify-between gap-2">
        <h2 id="stats-title" className="text-sm font-semibold">
          Last {PERIOD_DAYS} days
        </h2>
        <Link to={projectPath(project, 'analytics')} className="text-xs text-accent hover:underline">
          Analytics
        </Link>
      </div>
      <div className="grid grid-cols-2 gap-3 md:grid-cols-3 xl:grid-cols-6">
        <StatCard label="Emails sent" loading={loading} value={c ? formatNumber(c.sent) : ''} trend={countTrend(c?.sent, p?.sent, against)} />
        <StatCard label="Delivery rate" loading={loading} value={rate('deliveryRate')} trend={rateTrend(c, p, 'deliveryRate', 'up', against)} hint={c && c.sent > 0 && c.delivered === 0 ? 'confirmed by the relay’s delivery notifications (none received)' : sentHint} />
        <StatCard label="Open rate" loading={loading} value={rate('openRate')} trend={rateTrend(c, p, 'openRate', 'up', against)} hint={sentHint} />
        <StatCard label="Click rate" loading={loading} value={rate('clickRate')} trend={rateTrend(c, p, 'clickRate', 'up', against)} hint={sentHint} />
        <StatCard label="Bounce rate" loading={loading} value={rate('bounceRate')} trend={rateTrend(c, p, 'bounceRate', 'down', against)} hint={sentHint} />
        <StatCard label="Events tracked" loading={loading} value={c ? formatNumber(c.events) : ''} trend={countTrend(c?.events, p?.events, against)} />
      </div>
    </section>
  );
}

function LatestActivity() {
  const project = useProject();
  const recent = useQuery({
    queryKey: ['activity', 'recent-count', project.id, RECENT_MINUTES],
    queryFn: () => unwrap(api.GET('/activity/recent-count', { params: { query: { minutes: RECENT_MINUTES } } })),
    // Live: every 10 s while the tab is visible (TanStack Query pauses hidden tabs).
    refetchInterval: 10_000,
  });
  const latest = useQuery({
    queryKey: ['activity', 'latest', project.id, LATEST],
    queryFn: () => unwrap(api.GET('/activity', { params: { query: { limit: LATEST } } })),
  });
  // New activity counted: the latest items are read again.
  const seen = useRef<number | undefined>(undefined);
  const count = recent.data?.count;
  const refetchLatest = latest.refetch;
  useEffect(() => {
    if (count === undefined) return;
    if (seen.current !== undefined && seen.current !== count) void refetchLatest();
    seen.current = count;
  }, [count, refetchLatest]);

  return (
    <Card>
      <CardHeader>
        <CardTitle>Latest activity</CardTitle>
        <div className="flex items-center gap-3">
          <span className="flex items-center gap-1.5 text-xs text-fg-muted" aria-live="polite">
            <span className="relative flex size-2" aria-hidden>
              <span className="absolute inline-flex size-full animate-ping rounded-full bg-ok opacity-60" />
              <span className="relative inline-flex size-2 rounded-full bg-ok" />
            </span>
            {recent.error ? (
              'Live count unavailable'
            ) : recent.isPending ? (
              'Counting…'
            ) : (
              <span data-testid="recent-count">
                <span className="font-medium text-fg tabular-nums">{formatNumber(recent.data.count)}</span> in the last hour
              </span>
            )}
          </span>
          <Link to={projectPath(project, 'activity')} className="text-xs text-accent hover:underline">
            View all activity
          </Link>
        </div>
      </CardHeader>
      {latest.isPending ? (
        <ActivitySkeleton rows={5} />
      ) : latest.error ? (
        <div className="p-4">
          <ErrorState error={latest.error} onRetry={() => void latest.refetch()} />
        </div>
      ) : latest.data.data.length === 0 ? (
        <div className="px-4 py-8 text-center">
          <p className="text-fg-muted">Nothing has happened yet: sends, opens, clicks, subscriptions and tracked events show up here as they happen.</p>
          <Link to={projectPath(project, 'contacts')} className="mt-2 inline-block text-accent hover:underline">
            Add contacts
          </Link>
        </div>
      ) : (
        <ul className="divide-y divide-border" aria-label="Latest activity">
          {latest.data.data.map((item) => (
            <ActivityRow key={item.id} item={item} />
          ))}
        </ul>
      )}
    </Card>
  );
}

/** A project's first page: what to set up next, how its mail did lately, what just happened. */
export function HomePage() {
  const project = useProject();
  return (
    <>
      <PageHeader
        title="Home"
        description={`How ${project.name} is doing, and what to set up next.`}
        actions={
          <Link to={projectPath(project, 'campaigns')} className={buttonVariants({ variant: 'primary' })}>
            Send a campaign
          </Link>
        }
      />
      <div className="grid gap-6">
        <Checklist />
        <StatsSection />
        <LatestActivity />
      </div>
    </>
  );
}
