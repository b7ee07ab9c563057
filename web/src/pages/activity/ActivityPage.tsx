import { useQuery } from '@tanstack/react-query';
import { CalendarClock, Check, ChevronDown, ChevronLeft, ChevronRight, Hourglass, X } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { Link, useLocation, useSearchParams } from 'react-router';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { Button } from '@/components/ui/button';
import { Card, CardHeader, CardTitle } from '@/components/ui/card';
import { Input, Label } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { cn } from '@/lib/cn';
import { formatNumber } from '@/lib/format';
import { activityWindow, isIsoDate, parseList, toggleInList } from '../analytics/insight';
import { ActivityRow, ActivitySkeleton, type ActivityType, RelativeTime, TYPE_INFO } from './feed';

const PAGE_SIZE = 25;
const UPCOMING_DAYS = 7;
const FILTERS = ['types', 'contactId', 'startDate', 'endDate'] as const;

/** History state of a page reached with "Older": the cursors of the pages before it ('' = the first). */
interface PagingState {
  cursors?: string[];
}

const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 outline-none data-[highlighted]:bg-muted data-[disabled]:opacity-50';

function TypeFilter({ value, onChange }: { value: string | undefined; onChange: (next: string) => void }) {
  const types = useQuery({ queryKey: ['activity', 'types'], queryFn: () => unwrap(api.GET('/activity/types')), staleTime: 60_000 });
  const selected = parseList(value);
  const label = selected.length === 0 ? 'All types' : selected.length === 1 ? (TYPE_INFO[selected[0] as ActivityType]?.label ?? selected[0]) : `${selected.length} types`;
  const groups: { source: string; title: string }[] = [
    { source: 'events', title: 'Emails, contacts, segments and events' },
    { source: 'campaigns', title: 'Campaigns' },
    { source: 'workflows', title: 'Workflows' },
  ];
  return (
    <div className="grid gap-1.5">
      <Label id="activity-types-label">Types</Label>
      <M.Root modal={false}>
        <M.Trigger
          aria-labelledby="activity-types-label activity-types-value"
          className="flex h-9 min-w-44 items-center justify-between gap-2 rounded-md border border-border bg-surface px-3 text-left"
        >
          <span id="activity-types-value" className="truncate">
            {label}
          </span>
          <ChevronDown className="size-4 shrink-0 text-fg-muted" aria-hidden />
        </M.Trigger>
        <M.Portal>
          <M.Content align="start" className="z-50 max-h-[60vh] min-w-64 overflow-y-auto rounded-md border border-border bg-surface p-1 shadow-md">
            {types.isPending ? (
              <div className="grid gap-1 p-2" aria-busy="true">
                <Skeleton className="h-4 w-40" />
                <Skeleton className="h-4 w-32" />
              </div>
            ) : types.error ? (
              <div className="p-2 text-bad">Types could not be loaded.</div>
            ) : (
              groups.map((g) => (
                <M.Group key={g.source}>
                  <M.Label className="px-2 pt-2 pb-1 text-xs text-fg-muted">{g.title}</M.Label>
                  {types.data.data
                    .filter((t) => t.source === g.source)
                    .map((t) => (
                      <M.CheckboxItem
                        key={t.type}
                        className={menuItem}
                        checked={selected.includes(t.type)}
                        onSelect={(e) => {
                          e.preventDefault();
                          onChange(toggleInList(value, t.type));
                        }}
                      >
                        <span className="grid size-4 place-items-center">
                          <M.ItemIndicator>
                            <Check className="size-4" />
                          </M.ItemIndicator>
                        </span>
                        <span className={cn(!t.available && 'text-fg-muted')}>{TYPE_INFO[t.type].label}</span>
                        {!t.available ? <span className="ml-auto text-xs text-fg-muted">none yet</span> : null}
                      </M.CheckboxItem>
                    ))}
                </M.Group>
              ))
            )}
            {selected.length > 0 ? (
              <>
                <M.Separator className="my-1 h-px bg-border" />
                <M.Item className={menuItem} onSelect={() => onChange('')}>
                  <X className="size-4" /> Show every type
                </M.Item>
              </>
            ) : null}
          </M.Content>
        </M.Portal>
      </M.Root>
    </div>
  );
}

function ContactFilter({ contactId, onClear }: { contactId: string; onClear: () => void }) {
  const contact = useQuery({
    queryKey: ['contacts', contactId],
    queryFn: () => unwrap(api.GET('/contacts/{id}', { params: { path: { id: contactId } } })),
    retry: false,
  });
  return (
    <div className="grid gap-1.5">
      <span className="text-sm font-medium">Contact</span>
      <span className="flex h-9 items-center gap-2 rounded-md border border-border bg-muted px-3">
        <span className="max-w-56 truncate">{contact.data?.email ?? (contact.isPending ? '…' : contactId)}</span>
        <button type="button" onClick={onClear} className="rounded text-fg-muted hover:text-fg" aria-label="Show every contact">
          <X className="size-4" />
        </button>
      </span>
    </div>
  );
}

type Upcoming = components['schemas']['UpcomingItem'];

function UpcomingRow({ item }: { item: Upcoming }) {
  const project = useProject();
  if (item.type === 'campaign.scheduled' && item.campaign) {
    return (
      <li className="flex items-start gap-3 px-4 py-3">
        <CalendarClock className="mt-0.5 size-4 shrink-0 text-warn" aria-hidden />
        <div className="grid min-w-0 flex-1 gap-0.5">
          <Link to={projectPath(project, `campaigns/${item.campaign.id}`)} className="truncate font-medium hover:underline">
            {item.campaign.name}
          </Link>
          <span className="truncate text-xs text-fg-muted">Campaign · “{item.campaign.subject}”</span>
        </div>
        <RelativeTime iso={item.dueAt} className="text-xs" />
      </li>
    );
  }
  return (
    <li className="flex items-start gap-3 px-4 py-3">
      <Hourglass className="mt-0.5 size-4 shrink-0 text-warn" aria-hidden />
      <div className="grid min-w-0 flex-1 gap-0.5">
        {item.workflow ? (
          <Link to={projectPath(project, `workflows/${item.workflow.id}`)} className="truncate font-medium hover:underline">
            {item.workflow.name}
          </Link>
        ) : null}
        <span className="truncate text-xs text-fg-muted">
          {item.step ? `${item.step.name} (${item.step.type === 'DELAY' ? 'delay ends' : 'wait times out'})` : 'Waiting step'}
          {item.execution?.waitingFor ? ` · waiting for ${item.execution.waitingFor}` : ''}
        </span>
        {item.contact ? (
          <Link to={projectPath(project, `contacts/${item.contact.id}`)} className="truncate text-xs text-accent hover:underline">
            {item.contact.email}
          </Link>
        ) : null}
      </div>
      <RelativeTime iso={item.dueAt} className="text-xs" />
    </li>
  );
}

function UpcomingPanel() {
  const upcoming = useQuery({
    queryKey: ['activity', 'upcoming', UPCOMING_DAYS],
    queryFn: () => unwrap(api.GET('/activity/upcoming', { params: { query: { limit: 20, daysAhead: UPCOMING_DAYS } } })),
    refetchInterval: 60_000,
  });
  return (
    <Card className="self-start">
      <CardHeader>
        <CardTitle>Upcoming</CardTitle>
        <span className="text-xs text-fg-muted">next {UPCOMING_DAYS} days</span>
      </CardHeader>
      {upcoming.isPending ? (
        <ActivitySkeleton rows={3} />
      ) : upcoming.error ? (
        <div className="p-4">
          <ErrorState error={upcoming.error} onRetry={() => void upcoming.refetch()} />
        </div>
      ) : upcoming.data.data.length === 0 ? (
        <p className="px-4 py-6 text-fg-muted">Nothing is due: scheduled campaigns and waiting workflow steps show up here.</p>
      ) : (
        <>
          <ul className="divide-y divide-border" aria-label="Upcoming">
            {upcoming.data.data.map((item) => (
              <UpcomingRow key={`${item.type}:${item.campaign?.id ?? item.execution?.id}:${item.step?.id ?? ''}`} item={item} />
            ))}
          </ul>
          {upcoming.data.hasMore ? <p className="border-t border-border px-4 py-2 text-xs text-fg-muted">More is due in this window than shown here.</p> : null}
        </>
      )}
    </Card>
  );
}

/** The project's activity feed: filters and cursor in the URL, the upcoming panel beside it. */
export function ActivityPage() {
  const project = useProject();
  const location = useLocation();
  const [params, setParams] = useSearchParams();
  const types = params.get('types') ?? undefined;
  const contactId = params.get('contactId') ?? undefined;
  const startDate = params.get('startDate') ?? undefined;
  const endDate = params.get('endDate') ?? undefined;
  const cursor = params.get('cursor') ?? undefined;
  const cursors = (location.state as PagingState | null)?.cursors ?? [];
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const span = activityWindow(startDate, endDate, tz);
  const rangeProblem = isIsoDate(startDate) && isIsoDate(endDate) && startDate > endDate ? 'The end date is before the start date.' : undefined;

  const query = { limit: PAGE_SIZE, types: parseList(types).join(',') || undefined, contactId, ...span, cursor };
  const feed = useQuery({
    queryKey: ['activity', 'feed', project.id, query],
    queryFn: () => unwrap(api.GET('/activity', { params: { query } })),
    enabled: !rangeProblem,
  });

  /** A filter changed: a new first page (no cursor), a new history entry (back restores). */
  const setFilter = (name: (typeof FILTERS)[number], value: string | undefined) =>
    setParams((current) => {
      const next = new URLSearchParams(current);
      if (value) next.set(name, value);
      else next.delete(name);
      next.delete('cursor');
      return next;
    });
  const clearFilters = () => setParams(new URLSearchParams());
  const goTo = (nextCursor: string | undefined, stack: string[]) =>
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        if (nextCursor) next.set('cursor', nextCursor);
        else next.delete('cursor');
        return next;
      },
      { state: { cursors: stack } satisfies PagingState },
    );
  const older = () => feed.data?.cursor && goTo(feed.data.cursor, [...cursors, cursor ?? '']);
  const newer = () => (cursors.length > 0 ? goTo(cursors.at(-1) || undefined, cursors.slice(0, -1)) : goTo(undefined, []));
  const filtered = FILTERS.some((f) => params.has(f));
  const pageNumber = cursor ? (cursors.length > 0 ? cursors.length + 1 : undefined) : 1;

  return (
    <>
      <PageHeader
        title="Activity"
        description="Everything that happened in this project: emails, contacts, segments, events, campaigns and workflows."
        actions={
          filtered ? (
            <Button variant="secondary" onClick={clearFilters}>
              <X /> Clear filters
            </Button>
          ) : null
        }
      />
      <div className="grid gap-6 lg:grid-cols-[minmax(0,1fr)_20rem]">
        <div className="grid min-w-0 content-start gap-4">
          <div className="flex flex-wrap items-end gap-3" role="group" aria-label="Filters">
            <TypeFilter value={types} onChange={(v) => setFilter('types', v)} />
            <div className="grid gap-1.5">
              <Label htmlFor="activity-from">From</Label>
              <Input id="activity-from" type="date" className="w-40" value={startDate ?? ''} max={endDate} onChange={(e) => setFilter('startDate', e.target.value)} />
            </div>
            <div className="grid gap-1.5">
              <Label htmlFor="activity-to">To</Label>
              <Input id="activity-to" type="date" className="w-40" value={endDate ?? ''} min={startDate} onChange={(e) => setFilter('endDate', e.target.value)} />
            </div>
            {contactId ? <ContactFilter contactId={contactId} onClear={() => setFilter('contactId', undefined)} /> : null}
          </div>
          {!startDate && !endDate ? <p className="-mt-2 text-xs text-fg-muted">Showing the last 30 days; choose dates to see older activity.</p> : null}

          {rangeProblem ? (
            <p role="alert" className="text-bad">
              {rangeProblem}
            </p>
          ) : feed.error ? (
            <ErrorState error={feed.error} onRetry={() => void feed.refetch()} />
          ) : (
            <Card>
              <CardHeader>
                <CardTitle>Feed</CardTitle>
                {feed.data && !cursor ? (
                  <span className="text-xs text-fg-muted tabular-nums" data-testid="activity-total">
                    {feed.data.totalCapped ? `more than ${formatNumber(feed.data.total)}` : formatNumber(feed.data.total)} {feed.data.total === 1 ? 'item' : 'items'}
                  </span>
                ) : pageNumber ? (
                  <span className="text-xs text-fg-muted">Page {pageNumber}</span>
                ) : null}
              </CardHeader>
              {feed.isPending ? (
                <div aria-busy="true">
                  <ActivitySkeleton rows={8} />
                </div>
              ) : feed.data.data.length === 0 ? (
                <div className="p-4">
                  {filtered || cursor ? (
                    <EmptyState
                      title="No activity matches"
                      description="Nothing happened with these filters in this window. Widen the dates or show every type."
                      action={
                        <Button variant="secondary" onClick={clearFilters}>
                          Clear filters
                        </Button>
                      }
                    />
                  ) : (
                    <EmptyState
                      title="No activity yet"
                      description="Sends, opens, clicks, subscriptions, tracked events and workflow runs appear here as they happen."
                      action={
                        <Link to={projectPath(project, 'contacts')} className="text-accent hover:underline">
                          Add contacts
                        </Link>
                      }
                    />
                  )}
                </div>
              ) : (
                <ul className={cn('divide-y divide-border', feed.isFetching && 'opacity-70')} aria-label="Activity">
                  {feed.data.data.map((item) => (
                    <ActivityRow key={item.id} item={item} />
                  ))}
                </ul>
              )}
              {cursor || feed.data?.hasMore ? (
                <nav aria-label="Pages" className="flex items-center justify-between gap-2 border-t border-border px-4 py-2">
                  <Button variant="secondary" size="sm" onClick={newer} disabled={!cursor}>
                    <ChevronLeft /> {cursor && cursors.length === 0 ? 'Newest' : 'Newer'}
                  </Button>
                  <Button variant="secondary" size="sm" onClick={older} disabled={!feed.data?.hasMore || !feed.data.cursor}>
                    Older <ChevronRight />
                  </Button>
                </nav>
              ) : null}
            </Card>
          )}
        </div>
        <UpcomingPanel />
      </div>
    </>
  );
}
