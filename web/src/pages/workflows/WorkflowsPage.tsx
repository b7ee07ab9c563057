import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowDown, ArrowUp, ArrowUpDown, Copy, ListChecks, Plus, Search, Trash2 } from 'lucide-react';
import { type FormEvent, useEffect, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Label, Select, Textarea } from '@/components/ui/input';
import { SkeletonRows, TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { formatNumber } from '@/lib/format';
import { useUrlParam } from '@/lib/url-state';
import { Pager, pageParam, When, type WorkflowListItem, useSetParams, ActionsMenu, plural } from './parts';

const PAGE_SIZE = 25;

/** A column header that sorts the list (server-side; in the URL). Newest first without a sort. */
function SortHeader({ label, field, sort, dir, onSort }: { label: string; field: 'name' | 'updatedAt'; sort: string | undefined; dir: string | undefined; onSort: (field: string, dir: string) => void }) {
  const active = sort === field;
  const current = active ? (dir ?? (field === 'name' ? 'asc' : 'desc')) : undefined;
  const next = current === undefined ? (field === 'name' ? 'asc' : 'desc') : current === 'asc' ? 'desc' : 'asc';
  const Icon = current === 'asc' ? ArrowUp : current === 'desc' ? ArrowDown : ArrowUpDown;
  return (
    <TH aria-sort={current === 'asc' ? 'ascending' : current === 'desc' ? 'descending' : 'none'}>
      <button type="button" className="inline-flex items-center gap-1 hover:text-fg" onClick={() => onSort(field, next)}>
        {label} <Icon aria-hidden className="size-3" />
      </button>
    </TH>
  );
}

function CreateWorkflowDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const project = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [eventName, setEventName] = useState('');
  const [description, setDescription] = useState('');
  const [allowReentry, setAllowReentry] = useState(false);
  const create = useMutation({
    mutationFn: () => unwrap(api.POST('/workflows', { body: { name, eventName, description, allowReentry } })),
    onSuccess: (w) => {
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      onOpenChange(false);
      void navigate(projectPath(project, `workflows/${w.id}`));
    },
  });
  const error = create.error instanceof ApiError ? create.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  return (
    <Dialog
      open={open}
      onOpenChange={(o) => {
        if (!o) create.reset();
        onOpenChange(o);
      }}
      title="New workflow"
      description="A workflow starts for a contact when its trigger event is tracked. It is created disabled: build its steps, then enable it."
    >
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Name" error={error?.fieldMessage('name')}>
          <Input value={name} onChange={(e) => setName(e.target.value)} required autoFocus maxLength={200} />
        </Field>
        <Field label="Trigger event" error={error?.fieldMessage('eventName') ?? error?.fieldMessage('triggerConfig.eventName')} hint="The event name that starts it, e.g. signup, or contact.subscribed">
          <Input value={eventName} onChange={(e) => setEventName(e.target.value)} required autoComplete="off" />
        </Field>
        <Field label="Description" error={error?.fieldMessage('description')}>
          <Textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={2} />
        </Field>
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" checked={allowReentry} onChange={(e) => setAllowReentry(e.target.checked)} className="size-4 accent-[var(--accent)]" />
          Let a contact go through it more than once
        </label>
        {error && error.fields.length === 0 ? (
          <p role="alert" className="text-sm text-bad">
            {error.message}
          </p>
        ) : null}
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button type="submit" disabled={create.isPending || !name.trim() || !eventName.trim()}>
            Create workflow
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

export function WorkflowsPage() {
  const project = useProject();
  const navigate = useNavigate();
  const notify = useToast();
  const queryClient = useQueryClient();
  const [search] = useUrlParam('search');
  const [status] = useUrlParam('status');
  const [sortValue] = useUrlParam('sort');
  const [dirValue] = useUrlParam('dir');
  const sort = sortValue === 'name' || sortValue === 'updatedAt' ? sortValue : undefined;
  const dir = dirValue === 'asc' || dirValue === 'desc' ? dirValue : undefined;
  const setParams = useSetParams();
  const [pageValue, setPage] = useUrlParam('page');
  const page = pageParam(pageValue);
  const [draft, setDraft] = useState(search ?? '');
  // The URL changed by itself (back button, a link): the box shows it, and the debounce below keeps it.
  const [shownSearch, setShownSearch] = useState(search);
  if (search !== shownSearch) {
    setShownSearch(search);
    setDraft(search ?? '');
  }
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<WorkflowListItem | undefined>();

  useEffect(() => {
    const id = setTimeout(() => {
      if ((search ?? '') !== draft) setParams({ search: draft, page: undefined });
    }, 300);
    return () => clearTimeout(id);
  }, [draft, search, setParams]);

  const list = useQuery({
    queryKey: ['workflows', project.id, { search, status, page, sort, dir }],
    queryFn: () => unwrap(api.GET('/workflows', { params: { query: { page, pageSize: PAGE_SIZE, ...(search && { search }), ...(status && { status }), ...(sort && { sort }), ...(dir && { dir }) } } })),
    placeholderData: keepPreviousData,
  });

  const duplicate = useMutation({
    mutationFn: (w: WorkflowListItem) => unwrap(api.POST('/workflows/{id}/duplicate', { params: { path: { id: w.id } } })),
    onSuccess: (copy) => {
      notify({ title: `${copy.name} created`, description: 'The copy is disabled.' });
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
    },
    onError: (e) => notify({ title: 'Could not duplicate the workflow', description: e.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: (w: WorkflowListItem) => unwrap(api.DELETE('/workflows/{id}', { params: { path: { id: w.id } } })),
    onSuccess: (_, w) => {
      notify({ title: `${w.name} deleted` });
      setDeleting(undefined);
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
    },
    onError: (e) => notify({ title: 'Could not delete the workflow', description: e.message, tone: 'bad' }),
  });

  const rows = list.data?.data ?? [];
  const filtered = Boolean(search || status);
  return (
    <div>
      <PageHeader
        title="Workflows"
        description="Automations that run for a contact when an event is tracked: wait, check, email, update, call your system."
        actions={
          <Button onClick={() => setCreating(true)}>
            <Plus /> New workflow
          </Button>
        }
      />
      <div className="mb-3 flex flex-wrap items-end gap-3">
        <div className="relative w-72">
          <Label htmlFor="workflow-search" className="sr-only">
            Search workflows
          </Label>
          <Search aria-hidden className="pointer-events-none absolute top-2.5 left-2.5 size-4 text-fg-muted" />
          <Input id="workflow-search" type="search" placeholder="Search by name or description" value={draft} onChange={(e) => setDraft(e.target.value)} className="pl-8" />
        </div>
        <div>
          <Label htmlFor="workflow-status" className="sr-only">
            Status
          </Label>
          <Select id="workflow-status" value={status ?? ''} onChange={(e) => setParams({ status: e.target.value, page: undefined })} className="h-9 w-40">
            <option value="">All workflows</option>
            <option value="active">Enabled</option>
            <option value="disabled">Disabled</option>
          </Select>
        </div>
      </div>
      {list.isError ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : !list.isPending && rows.length === 0 ? (
        page > 1 ? (
          <EmptyState title="This page is empty" description="The list got shorter since this page was opened." action={<Button variant="secondary" onClick={() => setPage(undefined)}>First page</Button>} />
        ) : filtered ? (
          <EmptyState title="No workflow matches" description="Try another search or status." action={<Button variant="secondary" onClick={() => { setDraft(''); setParams({ search: undefined, status: undefined, page: undefined }); }}>Clear filters</Button>} />
        ) : (
          <EmptyState
            title="No workflows yet"
            description="Send a welcome series, follow up on a purchase, or call your system when a contact does something."
            action={
              <Button onClick={() => setCreating(true)}>
                <Plus /> New workflow
              </Button>
            }
          />
        )
      ) : (
        <>
          <Table aria-label="Workflows">
            <THead>
              <tr>
                <SortHeader label="Name" field="name" sort={sort} dir={dir} onSort={(f, d) => setParams({ sort: f, dir: d, page: undefined })} />
                <TH>Trigger</TH>
                <TH>Status</TH>
                <TH numeric>Steps</TH>
                <TH numeric>Executions</TH>
                <TH numeric>Active</TH>
                <SortHeader label="Updated" field="updatedAt" sort={sort} dir={dir} onSort={(f, d) => setParams({ sort: f, dir: d, page: undefined })} />
                <TH>
                  <span className="sr-only">Actions</span>
                </TH>
              </tr>
            </THead>
            <TBody>
              {list.isPending ? (
                <SkeletonRows columns={8} />
              ) : (
                rows.map((w) => (
                  <TR key={w.id} onClick={() => void navigate(projectPath(project, `workflows/${w.id}`))}>
                    <TD>
                      <Link to={projectPath(project, `workflows/${w.id}`)} onClick={(e) => e.stopPropagation()} className="font-medium hover:underline">
                        {w.name}
                      </Link>
                      {w.description ? <p className="max-w-md truncate text-xs text-fg-muted">{w.description}</p> : null}
                    </TD>
                    <TD>
                      <code className="rounded bg-muted px-1.5 py-0.5 text-xs">{w.triggerConfig.eventName}</code>
                    </TD>
                    <TD>{w.enabled ? <Badge tone="ok">Enabled</Badge> : <Badge>Disabled</Badge>}</TD>
                    <TD numeric>{formatNumber(w.stepCount)}</TD>
                    <TD numeric>{formatNumber(w.executionCount)}</TD>
                    <TD numeric>{formatNumber(w.activeExecutionCount)}</TD>
                    <TD>
                      <When iso={w.updatedAt} className="text-fg-muted" />
                    </TD>
                    <TD className="text-right" onClick={(e) => e.stopPropagation()}>
                      <ActionsMenu
                        label={`Actions for ${w.name}`}
                        actions={[
                          { label: 'Executions', icon: ListChecks, onSelect: () => void navigate(projectPath(project, `workflows/${w.id}/executions`)) },
                          { label: 'Duplicate', icon: Copy, onSelect: () => duplicate.mutate(w), disabled: duplicate.isPending },
                          { label: 'Delete', icon: Trash2, onSelect: () => setDeleting(w), danger: true },
                        ]}
                      />
                    </TD>
                  </TR>
                ))
              )}
            </TBody>
          </Table>
          {list.data ? <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={(p) => setPage(String(p))} /> : null}
        </>
      )}
      <CreateWorkflowDialog open={creating} onOpenChange={setCreating} />
      <ConfirmDialog
        open={deleting !== undefined}
        onOpenChange={(o) => !o && setDeleting(undefined)}
        title={`Delete ${deleting?.name ?? 'the workflow'}?`}
        description={
          <>
            Its {plural(deleting?.stepCount ?? 0, 'step')} and the history of its {plural(deleting?.executionCount ?? 0, 'execution')} are deleted. This cannot be undone.
            {deleting && deleting.activeExecutionCount > 0 ? ` It has ${plural(deleting.activeExecutionCount, 'active execution')}: cancel them first.` : ''}
          </>
        }
        confirmLabel="Delete workflow"
        pending={remove.isPending}
        onConfirm={() => deleting && remove.mutate(deleting)}
      />
    </div>
  );
}
