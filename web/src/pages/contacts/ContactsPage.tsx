import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { ChevronLeft, ChevronRight, Columns3, Download, Plus, Upload, UserCheck, UserMinus, Trash2 } from 'lucide-react';
import { Popover } from 'radix-ui';
import { useEffect, useMemo, useRef, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Input, Label, Select } from '@/components/ui/input';
import { SkeletonRows, Table, TBody, TD, TH, THead, TR } from '@/components/ui/table';
import { formatNumber } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { type BulkAction, BulkProgress, collectIds, type ListFilters, startBulk } from './bulk';
import { CreateContactDialog } from './CreateContactDialog';
import { ImportDialog } from './ImportDialog';
import { decodeColumns, encodeColumns, valueToText } from './logic';
import { CheckBox, When, Status } from './parts';

const PAGE_SIZE = 50;
const SORTS = {
  'createdAt.desc': 'Newest first',
  'createdAt.asc': 'Oldest first',
  'email.asc': 'Email A–Z',
  'email.desc': 'Email Z–A',
} as const;
type SortKey = keyof typeof SORTS;

/** The value of a data cell in the table. */
function cell(value: string | number | boolean | undefined) {
  if (value === undefined) return <span className="text-fg-muted">—</span>;
  return valueToText(value);
}

export function ContactsPage() {
  const project = useProject();
  const navigate = useNavigate();
  const notify = useToast();
  const [search, setSearch] = useUrlParam('search');
  const [subscribedParam, setSubscribed] = useUrlParam('subscribed');
  const [sortParam, setSort] = useUrlParam('sort');
  const [colsParam, setCols] = useUrlParam('cols');
  const [cursor, setCursor] = useUrlParam('cursor');
  const [, setParams] = useSearchParams();
  const subscribed = subscribedParam === 'true' || subscribedParam === 'false' ? subscribedParam : undefined;
  const sortKey: SortKey = sortParam && sortParam in SORTS ? (sortParam as SortKey) : 'createdAt.desc';
  const [sort, dir] = sortKey.split('.') as ['createdAt' | 'email', 'asc' | 'desc'];
  const columns = useMemo(() => decodeColumns(colsParam), [colsParam]);
  const filters: ListFilters = useMemo(() => ({ ...(search ? { search } : {}), ...(subscribed ? { subscribed } : {}) }), [search, subscribed]);

  // The search box types freely; the URL (and the query) follow ~300 ms after the last key.
  const [typed, setTyped] = useState(search ?? '');
  const [typedFor, setTypedFor] = useState(search);
  if (typedFor !== search) {
    // The URL changed (back button, a cleared filter): the box shows it.
    setTypedFor(search);
    setTyped(search ?? '');
  }
  useEffect(() => {
    if (typed === (search ?? '')) return;
    const t = setTimeout(() => setSearch(typed.trim() || undefined, { resetCursor: true, replace: true }), 300);
    return () => clearTimeout(t);
  }, [typed, search, setSearch]);

  const list = useQuery({
    queryKey: ['contacts', 'list', filters, sort, dir, cursor ?? ''],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { limit: PAGE_SIZE, sort, dir, ...filters, ...(cursor ? { cursor } : {}) } } })),
    placeholderData: keepPreviousData,
  });
  // The size of the filtered set: the first page answers it; a later page asks for it with limit 1.
  const count = useQuery({
    queryKey: ['contacts', 'count', filters],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { limit: 1, ...filters } } })).then((r) => r.total),
    enabled: Boolean(cursor),
  });
  const total = cursor ? count.data : list.isPlaceholderData ? undefined : list.data?.total;
  const fields = useQuery({ queryKey: ['contacts', 'fields'], queryFn: () => unwrap(api.GET('/contacts/fields')), staleTime: 60_000 });
  const dataKeys = (fields.data?.data ?? []).filter((f) => !f.standard);
  // A column is right-aligned when its key holds numbers on most contacts (the type GET /contacts/fields reports).
  const numericKeys = new Set(dataKeys.filter((f) => f.type === 'number').map((f) => f.key));

  // Previous pages: the cursors walked through in this view. A new filter or sort starts over,
  // and drops the selection (it was made among other contacts).
  const [history, setHistory] = useState<string[]>([]);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const viewKey = JSON.stringify([filters, sortKey]);
  const [lastView, setLastView] = useState(viewKey);
  if (lastView !== viewKey) {
    setLastView(viewKey);
    setHistory([]);
    setSelected(new Set());
    setAllMatching(false);
  }
  const rows = list.data?.data ?? [];
  const pageIds = rows.map((c) => c.id);
  const pageSelected = pageIds.filter((id) => selected.has(id)).length;
  const headerState = pageSelected === 0 ? false : pageSelected === pageIds.length ? true : 'indeterminate';
  const selectionCount = allMatching ? (total ?? selected.size) : selected.size;

  const [confirmDelete, setConfirmDelete] = useState(false);
  const [bulkRun, setBulkRun] = useState<{ action: BulkAction; jobIds: string[]; total: number } | undefined>();
  const [collecting, setCollecting] = useState<{ done: number } | undefined>();
  const abort = useRef<AbortController | undefined>(undefined);
  const bulk = useMutation({
    mutationFn: async (action: BulkAction) => {
      abort.current = new AbortController();
      const signal = abort.current.signal;
      let ids = [...selected];
      if (allMatching) {
        setCollecting({ done: 0 });
        try {
          ids = await collectIds(filters, (done) => setCollecting({ done }), signal);
        } finally {
          setCollecting(undefined);
        }
      }
      if (ids.length === 0) throw new Error('No contact matches any more.');
      return { action, jobIds: await startBulk(action, ids, signal), total: ids.length };
    },
    onSuccess: (r) => {
      setBulkRun(r);
      setSelected(new Set());
      setAllMatching(false);
      setConfirmDelete(false);
    },
    onError: (e) => notify({ title: 'The bulk action did not start', description: e.message, tone: 'bad' }),
  });

  const exportFile = useMutation({
    mutationFn: async () => {
      // The export needs X-Project-Id besides the cookie, which a plain link cannot send: fetch it and save the blob.
      const condition = search ? JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'contains', value: search }] }] }) : undefined;
      const { data, error, response } = await api.GET('/contacts/export', {
        params: { query: { format: 'csv', ...(subscribed ? { subscribed } : {}), ...(condition ? { condition } : {}) } },
        parseAs: 'blob',
      });
      if (!response.ok || !data) throw new Error((error as { error?: { message?: string } } | undefined)?.error?.message ?? `The export failed (${response.status})`);
      const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'contacts.csv';
      const url = URL.createObjectURL(data as Blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      return name;
    },
    onSuccess: (name) => notify({ title: 'Export downloaded', description: name }),
    onError: (e) => notify({ title: 'Export failed', description: e.message, tone: 'bad' }),
  });

  const [importOpen, setImportOpen] = useState(false);
  const [createOpen, setCreateOpen] = useState(false);
  const hasFilter = Boolean(search || subscribed);
  const colCount = 4 + columns.length;

  const toggleRow = (id: string, on: boolean) => {
    setAllMatching(false);
    setSelected((s) => {
      const next = new Set(s);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  };
  const togglePage = (on: boolean) => {
    setAllMatching(false);
    setSelected((s) => {
      const next = new Set(s);
      for (const id of pageIds) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return next;
    });
  };

  return (
    <div>
      <PageHeader
        title="Contacts"
        description="The people you email: their data, subscription and history."
        actions={
          <>
            <Button variant="secondary" onClick={() => exportFile.mutate()} disabled={exportFile.isPending} title="Download the contacts matching the search and subscription filter as CSV">
              <Download /> {exportFile.isPending ? 'Exporting…' : 'Export CSV'}
            </Button>
            <Button variant="secondary" onClick={() => setImportOpen(true)}>
              <Upload /> Import CSV
            </Button>
            <Button onClick={() => setCreateOpen(true)}>
              <Plus /> New contact
            </Button>
          </>
        }
      />

      <div className="mb-3 flex flex-wrap items-end gap-3">
        <div className="grid min-w-64 flex-1 gap-1">
          <Label htmlFor="contacts-search">Search</Label>
          <Input id="contacts-search" type="search" placeholder="Part of an email address" value={typed} onChange={(e) => setTyped(e.target.value)} />
        </div>
        <div className="grid gap-1">
          <Label htmlFor="contacts-subscribed">Subscription</Label>
          <Select id="contacts-subscribed" value={subscribed ?? ''} onChange={(e) => setSubscribed(e.target.value || undefined, { resetCursor: true })}>
            <option value="">All contacts</option>
            <option value="true">Subscribed</option>
            <option value="false">Unsubscribed</option>
          </Select>
        </div>
        <div className="grid gap-1">
          <Label htmlFor="contacts-sort">Sort</Label>
          <Select id="contacts-sort" value={sortKey} onChange={(e) => setSort(e.target.value === 'createdAt.desc' ? undefined : e.target.value, { resetCursor: true })}>
            {Object.entries(SORTS).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </Select>
        </div>
        <Popover.Root>
          <Popover.Trigger asChild>
            <Button variant="secondary" aria-label="Choose columns">
              <Columns3 /> Columns{columns.length ? ` (${columns.length})` : ''}
            </Button>
          </Popover.Trigger>
          <Popover.Portal>
            <Popover.Content align="end" sideOffset={4} className="z-50 grid max-h-80 w-64 gap-1 overflow-auto rounded-md border border-border bg-surface p-3 shadow-md">
              <p className="mb-1 text-xs font-medium text-fg-muted">Data keys shown as columns</p>
              {fields.isPending ? <p className="text-sm text-fg-muted">Loading…</p> : null}
              {fields.data && dataKeys.length === 0 ? <p className="text-sm text-fg-muted">No contact has data yet.</p> : null}
              {dataKeys.map((f) => {
                const on = columns.includes(f.key);
                return (
                  <label key={f.key} className="flex cursor-pointer items-center gap-2 rounded-sm px-1 py-1 text-sm hover:bg-muted">
                    <CheckBox checked={on} label={f.key} onChange={(v) => setCols(encodeColumns(v ? [...columns, f.key] : columns.filter((c) => c !== f.key)) || undefined, { replace: true })} />
                    <span className="truncate">{f.key}</span>
                    <span className="ml-auto text-xs text-fg-muted">{f.type}</span>
                  </label>
                );
              })}
            </Popover.Content>
          </Popover.Portal>
        </Popover.Root>
      </div>

      <ImportDialog open={importOpen} onOpenChange={setImportOpen} />
      {bulkRun ? (
        <div className="mb-3">
          <BulkProgress key={bulkRun.jobIds.join()} action={bulkRun.action} jobIds={bulkRun.jobIds} total={bulkRun.total} onClose={() => setBulkRun(undefined)} />
        </div>
      ) : null}

      {selected.size > 0 || allMatching ? (
        <div role="region" aria-label="Selection" className="mb-3 flex flex-wrap items-center gap-2 rounded-md border border-border bg-muted px-3 py-2 text-sm">
          <span className="font-medium">
            {formatNumber(selectionCount)} selected{allMatching ? ' (all matching)' : ''}
          </span>
          {!allMatching && headerState === true && total !== undefined && total > selected.size ? (
            <Button size="sm" variant="ghost" onClick={() => setAllMatching(true)}>
              Select all {formatNumber(total)} matching
            </Button>
          ) : null}
          <Button
            size="sm"
            variant="ghost"
            onClick={() => {
              setSelected(new Set());
              setAllMatching(false);
            }}
          >
            Clear
          </Button>
          <span className="ml-auto flex flex-wrap gap-2">
            <Button size="sm" variant="secondary" disabled={bulk.isPending || Boolean(bulkRun)} onClick={() => bulk.mutate('subscribe')}>
              <UserCheck /> Subscribe
            </Button>
            <Button size="sm" variant="secondary" disabled={bulk.isPending || Boolean(bulkRun)} onClick={() => bulk.mutate('unsubscribe')}>
              <UserMinus /> Unsubscribe
            </Button>
            <Button size="sm" variant="danger" disabled={bulk.isPending || Boolean(bulkRun)} onClick={() => setConfirmDelete(true)}>
              <Trash2 /> Delete
            </Button>
          </span>
          {collecting ? (
            <span className="w-full text-xs text-fg-muted" role="status">
              Collecting the matching contacts… {formatNumber(collecting.done)} of {formatNumber(total ?? 0)}{' '}
              <button type="button" className="underline" onClick={() => abort.current?.abort()}>
                Cancel
              </button>
            </span>
          ) : null}
        </div>
      ) : null}

      {list.isError ? (
        list.error instanceof ApiError && list.error.fieldMessage('cursor') ? (
          <EmptyState
            title="This page link has expired"
            description="The page position in the address was made for another sort order."
            action={
              <Button variant="secondary" onClick={() => setCursor(undefined, { replace: true })}>
                Go to the first page
              </Button>
            }
          />
        ) : (
          <ErrorState error={list.error} onRetry={() => void list.refetch()} />
        )
      ) : list.data && rows.length === 0 && !cursor ? (
        hasFilter ? (
          <EmptyState
            title="No contact matches"
            description="No contact matches this search and filter."
            action={
              <Button
                variant="secondary"
                onClick={() => {
                  setTyped('');
                  // One navigation (two useUrlParam setters in a row would each start from the same query string).
                  setParams((current) => {
                    const next = new URLSearchParams(current);
                    for (const name of ['search', 'subscribed', 'cursor']) next.delete(name);
                    return next;
                  });
                }}
              >
                Clear filters
              </Button>
            }
          />
        ) : (
          <EmptyState
            title="No contacts yet"
            description="Contacts are created when you import a CSV, add one here, or track an event or send an email through the API."
            action={
              <Button onClick={() => setImportOpen(true)}>
                <Upload /> Import contacts
              </Button>
            }
          />
        )
      ) : (
        <>
          <Table aria-label="Contacts" aria-busy={list.isFetching}>
            <THead>
              <tr>
                <TH className="w-8">
                  <CheckBox checked={headerState} onChange={togglePage} label="Select all contacts on this page" />
                </TH>
                <TH>Email</TH>
                <TH>Subscription</TH>
                {columns.map((c) => (
                  <TH key={c} numeric={numericKeys.has(c)}>
                    {c}
                  </TH>
                ))}
                <TH className="text-right">Created</TH>
              </tr>
            </THead>
            <TBody>
              {list.isPending ? (
                <SkeletonRows columns={colCount} />
              ) : (
                rows.map((c) => (
                  <TR key={c.id} onClick={() => void navigate(projectPath(project, `contacts/${c.id}`))} aria-selected={selected.has(c.id) || allMatching}>
                    <TD>
                      <CheckBox checked={allMatching || selected.has(c.id)} onChange={(on) => toggleRow(c.id, on)} label={`Select ${c.email}`} />
                    </TD>
                    <TD className="font-medium">
                      <Link to={projectPath(project, `contacts/${c.id}`)} onClick={(e) => e.stopPropagation()} className="hover:underline">
                        {c.email}
                      </Link>
                    </TD>
                    <TD>{c.subscribed ? <Status tone="ok">Subscribed</Status> : <Status tone="neutral">Unsubscribed</Status>}</TD>
                    {columns.map((k) => (
                      <TD key={k} numeric={numericKeys.has(k)} className="max-w-60 truncate">
                        {typeof c.data[k] === 'number' ? formatNumber(c.data[k]) : cell(c.data[k])}
                      </TD>
                    ))}
                    <TD className="text-right text-fg-muted">
                      <When iso={c.createdAt} />
                    </TD>
                  </TR>
                ))
              )}
            </TBody>
          </Table>
          <nav aria-label="Pages" className="mt-3 flex items-center justify-between gap-2 text-sm text-fg-muted">
            <span>
              {total !== undefined ? `${formatNumber(total)} ${total === 1 ? 'contact' : 'contacts'}` : ''}
              {hasFilter && total !== undefined ? ' match' : ''}
            </span>
            <span className="flex gap-2">
              <Button
                size="sm"
                variant="secondary"
                disabled={!cursor}
                onClick={() => {
                  const prev = history.at(-1);
                  setHistory((h) => h.slice(0, -1));
                  setCursor(prev || undefined);
                }}
              >
                <ChevronLeft /> Previous
              </Button>
              <Button
                size="sm"
                variant="secondary"
                disabled={!list.data?.hasMore || !list.data.cursor || list.isPlaceholderData}
                onClick={() => {
                  setHistory((h) => [...h, cursor ?? '']);
                  setCursor(list.data?.cursor ?? undefined);
                }}
              >
                Next <ChevronRight />
              </Button>
            </span>
          </nav>
        </>
      )}

      <ConfirmDialog
        open={confirmDelete}
        onOpenChange={setConfirmDelete}
        title={`Delete ${formatNumber(selectionCount)} ${selectionCount === 1 ? 'contact' : 'contacts'}?`}
        description="Their data, subscription state and event history are deleted for good. This cannot be undone."
        confirmLabel={bulk.isPending ? 'Deleting…' : 'Delete contacts'}
        pending={bulk.isPending}
        onConfirm={() => bulk.mutate('delete')}
      />
      <CreateContactDialog open={createOpen} onOpenChange={setCreateOpen} />
    </div>
  );
}
