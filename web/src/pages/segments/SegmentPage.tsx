import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ChevronLeft, ChevronRight, Copy, Cpu, MoreHorizontal, RefreshCw, Trash2 } from 'lucide-react';
import { DropdownMenu as M, Tabs } from 'radix-ui';
import { useMemo, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Skeleton } from '@/components/ui/skeleton';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { formatDateTime, formatNumber, formatRelative } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { countOf, treeToCard } from './conditions';
import { type Segment, segmentKey, segmentsKey } from './fieldOptions';
import { SegmentForm, type SegmentValues } from './SegmentForm';
import { AddMembersButton, RemoveMemberButton } from './StaticMembers';
import { Status } from './Status';

const menuContent = 'z-50 min-w-48 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 outline-none data-[highlighted]:bg-muted';
const tabClass =
  '-mb-px border-b-2 border-transparent px-3 py-2 whitespace-nowrap text-fg-muted hover:text-fg data-[state=active]:border-accent data-[state=active]:font-medium data-[state=active]:text-fg';

/** /segments/:segmentId: the members (live for DYNAMIC), the definition, refresh/compute, delete. */
export function SegmentPage() {
  const project = useProject();
  const { segmentId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const tab = params.get('tab') === 'definition' ? 'definition' : 'members';
  const segment = useQuery({ queryKey: segmentKey(project.id, segmentId), queryFn: () => unwrap(api.GET('/segments/{id}', { params: { path: { id: segmentId } } })) });

  if (segment.error) {
    return (
      <>
        <PageHeader title="Segment" />
        {segment.error instanceof ApiError && segment.error.status === 404 ? (
          <EmptyState
            title="No such segment"
            description="It may have been deleted, or it belongs to another project."
            action={
              <Link to={projectPath(project, 'segments')} className="text-accent underline">
                All segments
              </Link>
            }
          />
        ) : (
          <ErrorState error={segment.error} onRetry={() => void segment.refetch()} />
        )}
      </>
    );
  }
  if (!segment.data) {
    return (
      <div aria-busy="true" className="grid gap-4">
        <Skeleton className="h-7 w-64" />
        <Skeleton className="h-4 w-96" />
        <Skeleton className="h-64 w-full" />
      </div>
    );
  }
  const s = segment.data;
  return (
    <>
      <PageHeader title={s.name} description={s.description || (s.type === 'DYNAMIC' ? 'Contacts matching a condition, kept up to date.' : 'A list of contacts added by hand or through the API.')} actions={<Actions segment={s} />} />
      <Summary segment={s} />
      <Tabs.Root value={tab} onValueChange={(v) => setParams(v === 'members' ? {} : { tab: v })} className="mt-6">
        <Tabs.List aria-label="Segment sections" className="mb-6 flex gap-1 border-b border-border">
          <Tabs.Trigger value="members" className={tabClass}>
            Members
          </Tabs.Trigger>
          <Tabs.Trigger value="definition" className={tabClass}>
            {s.type === 'DYNAMIC' ? 'Condition and settings' : 'Settings'}
          </Tabs.Trigger>
        </Tabs.List>
        <Tabs.Content value="members">
          <Members segment={s} />
        </Tabs.Content>
        {/* Kept mounted: edits survive a look at the members. */}
        <Tabs.Content value="definition" forceMount className="data-[state=inactive]:hidden">
          <Definition key={s.updatedAt} segment={s} />
        </Tabs.Content>
      </Tabs.Root>
    </>
  );
}

function Summary({ segment: s }: { segment: Segment }) {
  return (
    <dl className="flex flex-wrap gap-x-8 gap-y-2 text-sm">
      <div>
        <dt className="text-fg-muted">Members</dt>
        <dd className="text-lg font-semibold tabular-nums" data-testid="member-count">
          {formatNumber(s.memberCount)}
        </dd>
      </div>
      <div>
        <dt className="text-fg-muted">Type</dt>
        <dd className="mt-1">
          <Badge>{s.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</Badge>
        </dd>
      </div>
      <div>
        <dt className="text-fg-muted">Membership</dt>
        <dd className="mt-1">{s.trackMembership ? <Status tone="ok">Tracked: entry and exit events</Status> : <Status tone="neutral">Not tracked</Status>}</dd>
      </div>
      <div>
        <dt className="text-fg-muted">Updated</dt>
        <dd className="mt-1">
          <time dateTime={s.updatedAt} title={formatDateTime(s.updatedAt)}>
            {formatRelative(s.updatedAt)}
          </time>
        </dd>
      </div>
    </dl>
  );
}

function Actions({ segment: s }: { segment: Segment }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const toast = useToast();
  const [confirming, setConfirming] = useState(false);

  const invalidate = () => {
    void queryClient.invalidateQueries({ queryKey: ['segment-members', project.id, s.id] });
    void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
  };
  const refresh = useMutation({
    mutationFn: () => unwrap(api.POST('/segments/{id}/refresh', { params: { path: { id: s.id } } })),
    onSuccess: (next) => {
      queryClient.setQueryData(segmentKey(project.id, s.id), next);
      invalidate();
      toast({ title: 'Count refreshed', description: `${formatNumber(next.memberCount)} ${next.memberCount === 1 ? 'member' : 'members'}` });
    },
    onError: (e) => toast({ title: 'The count could not be refreshed', description: e.message, tone: 'bad' }),
  });
  const compute = useMutation({
    mutationFn: () => unwrap(api.POST('/segments/{id}/compute', { params: { path: { id: s.id } } })),
    onSuccess: (r) => {
      void queryClient.invalidateQueries({ queryKey: segmentKey(project.id, s.id) });
      invalidate();
      toast({ title: 'Membership computed', description: `${formatNumber(r.memberCount)} ${r.memberCount === 1 ? 'member' : 'members'}: ${formatNumber(r.entered)} entered, ${formatNumber(r.exited)} left` });
    },
    onError: (e) => toast({ title: 'The membership could not be computed', description: e.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/segments/{id}', { params: { path: { id: s.id } } })),
    onSuccess: () => {
      setConfirming(false);
      queryClient.removeQueries({ queryKey: segmentKey(project.id, s.id) });
      void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
      toast({ title: `Segment “${s.name}” deleted` });
      // Unsaved edits of a deleted segment are not worth a "leave without saving?".
      void navigate(projectPath(project, 'segments'), { state: { discard: true } });
    },
  });
  const duplicate = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/segments', {
          body: { name: `${s.name} (copy)`.slice(0, 100), description: s.description, type: 'DYNAMIC', condition: s.condition ?? { logic: 'AND', groups: [] } },
        }),
      ),
    onSuccess: (copy) => {
      queryClient.setQueryData(segmentKey(project.id, copy.id), copy);
      void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
      toast({ title: `Segment duplicated as “${copy.name}”`, description: countOf(copy.memberCount, 'matching contact', 'matching contacts') });
      void navigate(`${projectPath(project, `segments/${copy.id}`)}?tab=definition`);
    },
    onError: (e) => toast({ title: 'The segment could not be duplicated', description: e.message, tone: 'bad' }),
  });
  const tracked = s.type === 'DYNAMIC' && s.trackMembership;

  return (
    <>
      {tracked ? (
        <Button variant="secondary" onClick={() => compute.mutate()} disabled={compute.isPending} title="Record who entered and left since the last compute (runs every 5 minutes on its own)">
          <Cpu aria-hidden className={compute.isPending ? 'animate-pulse' : undefined} /> {compute.isPending ? 'Computing…' : 'Compute now'}
        </Button>
      ) : null}
      <Button variant="secondary" onClick={() => refresh.mutate()} disabled={refresh.isPending} title="Count the members again">
        <RefreshCw aria-hidden className={refresh.isPending ? 'animate-spin' : undefined} /> {refresh.isPending ? 'Counting…' : 'Refresh count'}
      </Button>
      <M.Root>
        <M.Trigger className="inline-flex size-9 items-center justify-center rounded-md border border-border bg-surface hover:bg-muted" aria-label="More actions">
          <MoreHorizontal aria-hidden className="size-4" />
        </M.Trigger>
        <M.Portal>
          <M.Content align="end" className={menuContent}>
            {s.type === 'DYNAMIC' ? (
              <M.Item className={menuItem} disabled={duplicate.isPending} onSelect={() => duplicate.mutate()}>
                <Copy aria-hidden className="size-4" /> Duplicate
              </M.Item>
            ) : null}
            <M.Item className={`${menuItem} text-bad`} onSelect={() => setConfirming(true)}>
              <Trash2 aria-hidden className="size-4" /> Delete segment
            </M.Item>
          </M.Content>
        </M.Portal>
      </M.Root>
      <ConfirmDialog
        open={confirming}
        onOpenChange={(open) => {
          setConfirming(open);
          if (!open) remove.reset();
        }}
        title={`Delete “${s.name}”?`}
        description={
          <>
            The segment{s.trackMembership ? ' and its membership history' : ''} will be deleted; draft campaigns targeting it lose their audience. The{' '}
            {formatNumber(s.memberCount)} contacts themselves are kept.
          </>
        }
        confirmLabel={remove.isPending ? 'Deleting…' : 'Delete segment'}
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      >
        {remove.error ? (
          <p role="alert" className="text-sm text-bad">
            {remove.error.message}
          </p>
        ) : null}
      </ConfirmDialog>
    </>
  );
}

const PAGE_SIZE = 25;

function Members({ segment: s }: { segment: Segment }) {
  const project = useProject();
  const navigate = useNavigate();
  const [pageParam, setPage] = useUrlParam('page');
  const page = Math.max(1, Number.parseInt(pageParam ?? '1', 10) || 1);
  const members = useQuery({
    queryKey: ['segment-members', project.id, s.id, page, s.updatedAt],
    queryFn: () => unwrap(api.GET('/segments/{id}/contacts', { params: { path: { id: s.id }, query: { page, pageSize: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  if (members.error) return <ErrorState error={members.error} onRetry={() => void members.refetch()} />;
  const data = members.data;
  if (data && data.total === 0 && page === 1) {
    return (
      <EmptyState
        title="No members"
        description={s.type === 'DYNAMIC' ? 'No contact matches the condition right now; members appear here as contacts come to match it.' : 'A static segment holds the contacts you add to it by email.'}
        action={
          s.type === 'DYNAMIC' ? (
            <Link to="?tab=definition" className="text-accent underline">
              Edit the condition
            </Link>
          ) : (
            <AddMembersButton segment={s} />
          )
        }
      />
    );
  }
  return (
    <div className="grid gap-3">
      {s.type === 'STATIC' ? (
        <div className="flex justify-end">
          <AddMembersButton segment={s} />
        </div>
      ) : null}
      <Table aria-label="Members">
        <THead>
          <tr>
            <TH>Email</TH>
            <TH>Status</TH>
            <TH numeric>Data keys</TH>
            <TH>Created</TH>
            {s.type === 'STATIC' ? (
              <TH>
                <span className="sr-only">Actions</span>
              </TH>
            ) : null}
          </tr>
        </THead>
        <TBody>
          {!data ? <SkeletonRows columns={s.type === 'STATIC' ? 5 : 4} rows={6} /> : null}
          {data?.data.map((c) => (
            <TR
              key={c.id}
              onClick={(e) => {
                // Clicks in a dialog opened from the row reach it through React's tree, not the DOM's.
                if (e.currentTarget.contains(e.target as Node)) void navigate(projectPath(project, `contacts/${c.id}`));
              }}
            >
              <TD>
                <Link to={projectPath(project, `contacts/${c.id}`)} className="hover:underline" onClick={(e) => e.stopPropagation()}>
                  {c.email}
                </Link>
              </TD>
              <TD>{c.subscribed ? <Status tone="ok">Subscribed</Status> : <Status tone="neutral">Unsubscribed</Status>}</TD>
              <TD numeric>{formatNumber(Object.keys(c.data).length)}</TD>
              <TD>
                <time dateTime={c.createdAt} title={formatDateTime(c.createdAt)} className="text-fg-muted">
                  {formatRelative(c.createdAt)}
                </time>
              </TD>
              {s.type === 'STATIC' ? (
                <TD className="w-12 py-0 text-right">
                  <RemoveMemberButton segment={s} email={c.email} />
                </TD>
              ) : null}
            </TR>
          ))}
        </TBody>
      </Table>
      {data ? (
        <nav aria-label="Pages" className="flex items-center justify-between gap-3 text-sm">
          <span className="text-fg-muted">
            {formatNumber(data.total)} {data.total === 1 ? 'member' : 'members'}
            {data.totalPages > 1 ? ` · page ${formatNumber(data.page)} of ${formatNumber(data.totalPages)}` : ''}
          </span>
          <div className="flex gap-2">
            <Button variant="secondary" size="sm" disabled={page <= 1 || members.isFetching} onClick={() => setPage(page - 1 <= 1 ? undefined : String(page - 1))}>
              <ChevronLeft aria-hidden /> Previous
            </Button>
            <Button variant="secondary" size="sm" disabled={page >= data.totalPages || members.isFetching} onClick={() => setPage(String(page + 1))}>
              Next <ChevronRight aria-hidden />
            </Button>
          </div>
        </nav>
      ) : null}
    </div>
  );
}

function Definition({ segment: s }: { segment: Segment }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const toast = useToast();
  const initial = useMemo(
    () => ({ type: s.type, name: s.name, description: s.description, trackMembership: s.trackMembership, ...(s.type === 'DYNAMIC' && s.condition ? { card: treeToCard(s.condition) } : {}) }),
    [s],
  );
  const save = useMutation({
    mutationFn: (v: SegmentValues) =>
      unwrap(
        api.PATCH('/segments/{id}', {
          params: { path: { id: s.id } },
          body: {
            name: v.name,
            description: v.description,
            trackMembership: v.trackMembership,
            ...(v.condition && JSON.stringify(v.condition) !== JSON.stringify(s.condition) ? { condition: v.condition } : {}),
          },
        }),
      ),
    onSuccess: (next) => {
      queryClient.setQueryData(segmentKey(project.id, s.id), next);
      void queryClient.invalidateQueries({ queryKey: ['segment-members', project.id, s.id] });
      void queryClient.invalidateQueries({ queryKey: segmentsKey(project.id) });
      toast({ title: 'Segment saved', description: countOf(next.memberCount, 'matching contact', 'matching contacts') });
    },
  });
  return (
    <SegmentForm
      initial={initial}
      segmentId={s.id}
      editing
      submitLabel="Save changes"
      pending={save.isPending}
      error={save.error}
      onSubmit={(v) => save.mutate(v)}
    />
  );
}

