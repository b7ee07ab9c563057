import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft, Ban, Copy, FlaskConical, MoreHorizontal, Pencil, Send, Trash2 } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button, buttonVariants } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Skeleton } from '@/components/ui/skeleton';
import { formatDateTime, formatNumber, formatRate, formatRelative } from '@/lib/format';
import { EmailPreview } from '../templates/Preview';
import { CampaignInsight } from './Insight';
import { allowedActions, audienceSummary, funnel, pollInterval, progress, statusLabel, statusTone, type Stats } from './logic';
import { type Campaign, SendDialog, TestSendDialog, useSegments } from './shared';

const menuContent = 'z-50 min-w-44 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 text-sm outline-none data-[highlighted]:bg-muted [&_svg]:size-4';

function Time({ iso }: { iso: string }) {
  return (
    <time dateTime={iso} title={formatDateTime(iso)}>
      {formatRelative(iso)}
    </time>
  );
}

function Progress({ stats }: { stats: Stats }) {
  const p = progress(stats);
  return (
    <Card className="mb-4">
      <CardBody className="grid gap-2">
        <div className="flex items-baseline justify-between text-sm">
          <span className="font-medium">Sending…</span>
          <span className="text-fg-muted tabular-nums" data-testid="send-progress">
            {formatNumber(p.processed)} of {formatNumber(p.total)} processed ({p.percent.toFixed(1)} %)
          </span>
        </div>
        <div role="progressbar" aria-label="Sending progress" aria-valuemin={0} aria-valuemax={p.total} aria-valuenow={p.processed} className="h-2 overflow-hidden rounded-full bg-muted">
          <div className="h-full rounded-full bg-accent transition-[width] duration-500" style={{ width: `${p.percent}%` }} />
        </div>
      </CardBody>
    </Card>
  );
}

function Funnel({ stats }: { stats: Stats }) {
  const steps = funnel(stats);
  return (
    <Card>
      <CardHeader>
        <CardTitle>Funnel</CardTitle>
        <span className="text-xs text-fg-muted">Share of sent · of the step before</span>
      </CardHeader>
      <CardBody>
        <ol className="grid gap-3" aria-label="Funnel">
          {steps.map((s, i) => (
            <li key={s.key} className="grid gap-1" data-testid={`funnel-${s.key}`}>
              <div className="flex items-baseline justify-between gap-2 text-sm">
                <span className="font-medium">{s.label}</span>
                <span className="tabular-nums">
                  <strong className="text-base">{formatNumber(s.value)}</strong>
                  {i > 0 ? (
                    <span className="ml-2 text-fg-muted">
                      {formatRate(s.ofSent)} · {formatRate(s.ofPrevious)}
                    </span>
                  ) : null}
                </span>
              </div>
              <div className="h-2 overflow-hidden rounded-full bg-muted" aria-hidden>
                <div className="h-full rounded-full bg-accent" style={{ width: `${Math.max(s.value > 0 ? 1 : 0, s.ofSent * 100)}%`, opacity: 1 - i * 0.18 }} />
              </div>
            </li>
          ))}
        </ol>
      </CardBody>
    </Card>
  );
}

function Counter({ label, value, hint, tone }: { label: string; value: ReactNode; hint?: string; tone?: 'bad' | 'warn' }) {
  return (
    <div className="grid gap-0.5 rounded-md border border-border bg-surface px-3 py-2" title={hint}>
      <span className="text-xs text-fg-muted">{label}</span>
      <span className={`text-right text-lg font-semibold tabular-nums ${tone === 'bad' ? 'text-bad' : tone === 'warn' ? 'text-warn' : ''}`}>{value}</span>
    </div>
  );
}

function Outcomes({ stats, rates }: { stats: Stats; rates: { bounceRate: number; complaintRate: number } }) {
  return (
    <Card>
      <CardHeader>
        <CardTitle>Problems and other outcomes</CardTitle>
      </CardHeader>
      <CardBody className="grid grid-cols-2 gap-2 sm:grid-cols-3">
        <Counter label={`Bounced · ${formatRate(rates.bounceRate)}`} value={formatNumber(stats.bounced)} tone={stats.bounced ? 'bad' : undefined} hint="Rejected by the recipient's server; the address is suppressed" />
        <Counter label={`Complaints · ${formatRate(rates.complaintRate)}`} value={formatNumber(stats.complained)} tone={stats.complained ? 'bad' : undefined} hint="Marked as spam by the recipient" />
        <Counter label="Failed" value={formatNumber(stats.failed)} tone={stats.failed ? 'bad' : undefined} hint="Could not be handed to the mail relay" />
        <Counter label="Not sent" value={formatNumber(stats.cancelled)} hint="Suppressed addresses, contacts unsubscribed or deleted since, or a cancel" />
        <Counter label="Unconfirmed" value={formatNumber(stats.unconfirmed)} tone={stats.unconfirmed ? 'warn' : undefined} hint="Handed over, but the relay's confirmation never came: not sent again" />
        <Counter label="Pending" value={formatNumber(stats.pending)} hint="Not yet handed to the relay" />
      </CardBody>
    </Card>
  );
}

function Summary({ c }: { c: Campaign }) {
  const segments = useSegments();
  const segmentName = segments.data?.find((s) => s.id === c.segmentId)?.name;
  const rows: [string, ReactNode][] = [
    ['Subject', c.subject || <em className="text-fg-muted">none</em>],
    ['From', c.fromName ? `${c.fromName} <${c.from}>` : c.from],
    ['Audience', audienceSummary(c, segmentName)],
    ['Type', c.type.charAt(0) + c.type.slice(1).toLowerCase()],
  ];
  if (c.scheduledFor) rows.push(['Scheduled for', <Time key="s" iso={c.scheduledFor} />]);
  if (c.startedAt) rows.push(['Started', <Time key="st" iso={c.startedAt} />]);
  if (c.sentAt) rows.push(['Finished', <Time key="f" iso={c.sentAt} />]);
  if (c.cancelledAt) rows.push(['Cancelled', <Time key="c" iso={c.cancelledAt} />]);
  rows.push(['Created', <Time key="cr" iso={c.createdAt} />]);
  return (
    <Card>
      <CardHeader>
        <CardTitle>Details</CardTitle>
      </CardHeader>
      <CardBody>
        <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-2 text-sm">
          {rows.map(([k, v]) => (
            <div key={k} className="contents">
              <dt className="text-fg-muted">{k}</dt>
              <dd className="min-w-0 truncate">{v}</dd>
            </div>
          ))}
        </dl>
      </CardBody>
    </Card>
  );
}

function CampaignView({ c }: { c: Campaign }) {
  const project = useProject();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const toast = useToast();
  const [dialog, setDialog] = useState<'send' | 'cancel' | 'delete' | 'test'>();
  const actions = allowedActions(c.status);
  const segments = useSegments();
  const segmentName = segments.data?.find((s) => s.id === c.segmentId)?.name;

  const stats = useQuery({
    queryKey: ['campaigns', c.id, 'stats'],
    queryFn: () => unwrap(api.GET('/campaigns/{id}/stats', { params: { path: { id: c.id } } })),
    enabled: c.status !== 'DRAFT',
    refetchInterval: () => pollInterval(qc.getQueryData<Campaign>(['campaigns', c.id]), Date.now()),
  });

  // A toast when sending finishes while the page is open; the stats and insight polls stop with
  // SENDING, so they are read once more: their last poll may predate the final emails.
  const previous = useRef(c.status);
  useEffect(() => {
    if (previous.current === 'SENDING' && c.status !== 'SENDING') void qc.invalidateQueries({ queryKey: ['campaigns', c.id] });
    if (previous.current === 'SENDING' && c.status === 'SENT') toast({ title: `“${c.name || 'Untitled campaign'}” finished sending`, description: `${formatNumber(c.sentCount)} sent` });
    previous.current = c.status;
  }, [c.status, c.id, c.name, c.sentCount, qc, toast]);

  const done = (title: string) => {
    void qc.invalidateQueries({ queryKey: ['campaigns'] });
    toast({ title });
  };
  const cancel = useMutation({
    mutationFn: () => unwrap(api.POST('/campaigns/{id}/cancel', { params: { path: { id: c.id } } })),
    onSuccess: () => {
      setDialog(undefined);
      done('Campaign cancelled');
    },
    onError: (e) => toast({ title: 'Could not cancel', description: e.message, tone: 'bad' }),
  });
  const duplicate = useMutation({
    mutationFn: () => unwrap(api.POST('/campaigns/{id}/duplicate', { params: { path: { id: c.id } } })),
    onSuccess: (r) => {
      done(`Duplicated as “${r.data.name}”`);
      navigate(projectPath(project, `campaigns/${r.data.id}/edit`));
    },
    onError: (e) => toast({ title: 'Could not duplicate', description: e.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/campaigns/{id}', { params: { path: { id: c.id } } })),
    onSuccess: () => {
      setDialog(undefined);
      done('Campaign deleted');
      navigate(projectPath(project, 'campaigns'));
    },
    onError: (e) => toast({ title: 'Could not delete', description: e.message, tone: 'bad' }),
  });

  const s = stats.data;
  return (
    <div>
      <Link to={projectPath(project, 'campaigns')} className="mb-2 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> Campaigns
      </Link>
      <PageHeader
        title={c.name || 'Untitled campaign'}
        description={audienceSummary(c, segmentName)}
        actions={
          <>
            <Badge tone={statusTone(c.status)} className="text-sm" data-testid="campaign-status">
              {statusLabel(c.status)}
            </Badge>
            {actions.edit ? (
              <Link to={projectPath(project, `campaigns/${c.id}/edit`)} className={buttonVariants({ variant: 'secondary' })}>
                <Pencil /> Edit
              </Link>
            ) : null}
            {actions.cancel ? (
              <Button variant="secondary" onClick={() => setDialog('cancel')}>
                <Ban /> Cancel campaign
              </Button>
            ) : null}
            {actions.send ? (
              <Button onClick={() => setDialog('send')}>
                <Send /> Send…
              </Button>
            ) : null}
            <M.Root>
              <M.Trigger className={buttonVariants({ variant: 'ghost', size: 'icon' })} aria-label="More actions">
                <MoreHorizontal />
              </M.Trigger>
              <M.Portal>
                <M.Content align="end" className={menuContent}>
                  <M.Item className={menuItem} disabled={duplicate.isPending} onSelect={() => duplicate.mutate()}>
                    <Copy /> Duplicate
                  </M.Item>
                  <M.Item className={menuItem} onSelect={() => setDialog('test')}>
                    <FlaskConical /> Send test…
                  </M.Item>
                  {actions.remove ? (
                    <M.Item className={`${menuItem} text-bad`} onSelect={() => setDialog('delete')}>
                      <Trash2 /> Delete…
                    </M.Item>
                  ) : null}
                </M.Content>
              </M.Portal>
            </M.Root>
          </>
        }
      />
      {c.status === 'CANCELLED' && c.statusReason ? (
        <div role="status" className="mb-4 rounded-md border border-bad/40 bg-bad/5 px-4 py-3 text-sm">
          <p className="font-medium text-bad">{c.statusReason.code === 'CANCELLED_BY_USER' ? 'Cancelled' : 'Sending could not start'}</p>
          <p className="text-fg-muted">{c.statusReason.message}</p>
        </div>
      ) : null}
      {c.status === 'SCHEDULED' && c.scheduledFor ? (
        <div role="status" className="mb-4 rounded-md border border-warn/40 bg-warn/5 px-4 py-3 text-sm">
          Scheduled for <strong>{formatDateTime(c.scheduledFor)}</strong> (<Time iso={c.scheduledFor} />
          ). Recipients are taken when it starts.
        </div>
      ) : null}
      {c.status === 'SENDING' && s ? <Progress stats={s} /> : null}
      {stats.isError ? <ErrorState error={stats.error} onRetry={() => void stats.refetch()} /> : null}
      {c.status !== 'DRAFT' ? (
        <div className="mb-4 grid gap-4 lg:grid-cols-2">
          {s ? (
            <>
              <Funnel stats={s} />
              <Outcomes stats={s} rates={s} />
            </>
          ) : stats.isPending ? (
            <>
              <Skeleton className="h-64 w-full" />
              <Skeleton className="h-64 w-full" />
            </>
          ) : null}
        </div>
      ) : (
        <div className="mb-4 rounded-md border border-dashed border-border px-4 py-6 text-center text-fg-muted">This draft has not been sent: its results appear here once it is.</div>
      )}
      {c.status === 'SENDING' || c.status === 'SENT' || (c.status === 'CANCELLED' && c.startedAt) ? <CampaignInsight c={c} /> : null}
      <div className="grid gap-4 lg:grid-cols-[1fr_2fr]">
        <Summary c={c} />
        <Card>
          <CardHeader>
            <CardTitle>Content</CardTitle>
          </CardHeader>
          <CardBody>
            <EmailPreview subject={c.subject} body={c.body} />
          </CardBody>
        </Card>
      </div>

      <SendDialog open={dialog === 'send'} onOpenChange={(o) => setDialog(o ? 'send' : undefined)} campaign={c} segmentName={segmentName} prepare={async () => c.id} onSent={() => undefined} />
      <TestSendDialog open={dialog === 'test'} onOpenChange={(o) => setDialog(o ? 'test' : undefined)} prepare={async () => c.id} />
      <ConfirmDialog
        open={dialog === 'cancel'}
        onOpenChange={(o) => setDialog(o ? 'cancel' : undefined)}
        title="Cancel this campaign?"
        description={
          c.status === 'SENDING'
            ? `Emails not yet handed to the mail relay are not sent${s ? ` (${formatNumber(s.pending)} pending now)` : ''}; ones already sent stay sent. A cancelled campaign cannot be sent again (duplicate it instead).`
            : 'The scheduled send is called off. A cancelled campaign cannot be sent again (duplicate it instead).'
        }
        confirmLabel="Cancel campaign"
        pending={cancel.isPending}
        onConfirm={() => cancel.mutate()}
      />
      <ConfirmDialog
        open={dialog === 'delete'}
        onOpenChange={(o) => setDialog(o ? 'delete' : undefined)}
        title="Delete this campaign?"
        description={`“${c.name || 'Untitled campaign'}” and its results are deleted for good. Its emails stay in the contacts' activity.`}
        confirmLabel="Delete campaign"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </div>
  );
}

/** campaigns/:campaignId: state, live progress while sending, funnel and outcomes, opens and clicks over time, top links, bounces, content. */
export function CampaignPage() {
  const { campaignId = '' } = useParams();
  const campaign = useQuery({
    queryKey: ['campaigns', campaignId],
    queryFn: () => unwrap(api.GET('/campaigns/{id}', { params: { path: { id: campaignId } } })),
    refetchInterval: (q) => pollInterval(q.state.data, Date.now()),
  });
  if (campaign.isError) return <ErrorState error={campaign.error} onRetry={() => void campaign.refetch()} />;
  if (!campaign.data)
    return (
      <div className="grid gap-4" aria-busy="true">
        <Skeleton className="h-8 w-64" />
        <Skeleton className="h-64 w-full" />
      </div>
    );
  return <CampaignView c={campaign.data} />;
}
