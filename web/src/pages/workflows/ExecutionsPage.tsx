import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft, Ban, Play, X } from 'lucide-react';
import { type FormEvent, useEffect, useId, useState } from 'react';
import { Link, useParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Label, Select, Textarea } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { SkeletonRows, TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { formatDateTime, formatNumber } from '@/lib/format';
import { cn } from '@/lib/cn';
import { useUrlParam } from '@/lib/url-state';
import { BRANCH_LABELS, formatSeconds, STEP_LABELS } from './graph';
import { isActive, Pager, pageParam, StatusBadge, StepChip, When, type WorkflowExecution, useSetParams, ActionsMenu, plural } from './parts';

const PAGE_SIZE = 25;
const STATUSES = ['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'] as const;

function duration(from: string, to: string | null): string | undefined {
  if (!to) return undefined;
  const s = Math.max(0, Math.round((Date.parse(to) - Date.parse(from)) / 1000));
  return s < 60 ? `${s} s` : formatSeconds(s - (s % 60));
}

function StartDialog({ workflowId, open, onOpenChange, onStarted }: { workflowId: string; open: boolean; onOpenChange: (o: boolean) => void; onStarted: (id: string) => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState('');
  const [context, setContext] = useState('');
  const [contextError, setContextError] = useState<string | undefined>();
  // The contact picker: addresses matching what is typed (debounced), offered as suggestions.
  const listId = useId();
  const [query, setQuery] = useState('');
  useEffect(() => {
    const id = setTimeout(() => setQuery(email.trim()), 250);
    return () => clearTimeout(id);
  }, [email]);
  const matches = useQuery({
    queryKey: ['contacts', project.id, 'picker', query],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { search: query, limit: 8 } } })),
    enabled: open && query.length >= 2,
    staleTime: 10_000,
  });
  const start = useMutation({
    mutationFn: (ctx: Record<string, unknown> | undefined) =>
      unwrap(api.POST('/workflows/{id}/executions', { params: { path: { id: workflowId } }, body: { email: email.trim(), ...(ctx && { context: ctx }) } })),
    onSuccess: (x) => {
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      onOpenChange(false);
      setEmail('');
      setContext('');
      onStarted(x.id);
    },
  });
  const error = start.error instanceof ApiError ? start.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    let ctx: Record<string, unknown> | undefined;
    if (context.trim()) {
      try {
        const parsed = JSON.parse(context) as unknown;
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        ctx = parsed as Record<string, unknown>;
      } catch {
        setContextError('A JSON object, e.g. {"coupon": "WELCOME10"}');
        return;
      }
    }
    setContextError(undefined);
    start.mutate(ctx);
  };
  return (
    <Dialog
      open={open}
      onOpenChange={(o) => {
        if (!o) start.reset();
        onOpenChange(o);
      }}
      title="Start for a contact"
      description="Runs the workflow for one existing contact now, as if the trigger event had been tracked. The workflow must be enabled."
    >
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Contact email" error={error?.fieldMessage('email') ?? error?.fieldMessage('contactId')}>
          <Input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus list={listId} autoComplete="off" />
        </Field>
        <datalist id={listId}>
          {(matches.data?.data ?? []).map((c) => (
            <option key={c.id} value={c.email} />
          ))}
        </datalist>
        <Field label="Context (JSON, optional)" error={contextError ?? error?.fieldMessage('context')} hint="Variables for templates and conditions: {{context.key}}">
          <Textarea value={context} onChange={(e) => setContext(e.target.value)} rows={3} className="font-mono text-xs" />
        </Field>
        {error && error.fields.length === 0 ? (
          <p role="alert" className="text-sm text-bad">
            {error.message}
          </p>
        ) : null}
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button type="submit" disabled={start.isPending || !email.trim()}>
            Start
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function Timeline({ workflowId, executionId, onClose, onCancel }: { workflowId: string; executionId: string; onClose: () => void; onCancel: (x: WorkflowExecution) => void }) {
  const project = useProject();
  const detail = useQuery({
    queryKey: ['workflows', project.id, 'execution', executionId],
    queryFn: () => unwrap(api.GET('/workflows/{id}/executions/{executionId}', { params: { path: { id: workflowId, executionId } } })),
    refetchInterval: (q) => (q.state.data && isActive(q.state.data.status) ? 1000 : false),
  });
  const x = detail.data;
  return (
    <aside aria-label="Execution timeline" className="w-96 shrink-0 self-start rounded-md border border-border bg-surface">
      <div className="flex items-start gap-2 border-b border-border px-4 py-3">
        <div className="min-w-0 flex-1">
          <h2 className="font-semibold">Execution</h2>
          {x ? <p className="truncate text-sm text-fg-muted">{x.contact.email}</p> : null}
        </div>
        <Button size="icon" variant="ghost" className="size-8" aria-label="Close the timeline" onClick={onClose}>
          <X />
        </Button>
      </div>
      {detail.isError ? (
        <div className="p-4">
          <ErrorState error={detail.error} onRetry={() => void detail.refetch()} />
        </div>
      ) : !x ? (
        <div className="grid gap-3 p-4" aria-busy="true">
          <Skeleton className="h-5 w-40" />
          <Skeleton className="h-16 w-full" />
          <Skeleton className="h-16 w-full" />
        </div>
      ) : (
        <div className="grid gap-4 p-4">
          <dl className="grid grid-cols-2 gap-2 text-sm">
            <div>
              <dt className="text-xs text-fg-muted">Status</dt>
              <dd>
                <StatusBadge status={x.status} />
              </dd>
            </div>
            <div>
              <dt className="text-xs text-fg-muted">Started</dt>
              <dd>
                <When iso={x.startedAt} />
              </dd>
            </div>
            {x.completedAt ? (
              <div>
                <dt className="text-xs text-fg-muted">Finished</dt>
                <dd>
                  <When iso={x.completedAt} /> <span className="text-fg-muted">({duration(x.startedAt, x.completedAt)})</span>
                </dd>
              </div>
            ) : null}
            {x.error || x.exitReason ? (
              <div className="col-span-2">
                <dt className="text-xs text-fg-muted">{x.error ? 'Error' : 'Exit reason'}</dt>
                <dd className={cn(x.error && 'text-bad')}>{x.error ?? x.exitReason}</dd>
              </div>
            ) : null}
          </dl>
          {Object.keys(x.event).length > 0 || Object.keys(x.context).length > 0 ? (
            <details className="text-xs">
              <summary className="cursor-pointer text-fg-muted">Event data and context</summary>
              <pre className="mt-1 max-h-48 overflow-auto rounded-md bg-muted p-2">{JSON.stringify({ event: x.event, context: x.context }, null, 2)}</pre>
            </details>
          ) : null}
          <ol aria-label="Steps" className="grid gap-0">
            {x.steps.map((s, i) => (
              <li key={s.id} className="relative flex gap-3 pb-4">
                {i < x.steps.length - 1 ? <span aria-hidden className="absolute top-8 bottom-0 left-3.5 w-px bg-border" /> : null}
                <StepChip type={s.stepType} />
                <div className="grid min-w-0 flex-1 gap-0.5">
                  <div className="flex items-center justify-between gap-2">
                    <p className="truncate text-sm font-medium">{s.stepName}</p>
                    <StatusBadge status={s.status} />
                  </div>
                  <p className="text-xs text-fg-muted">
                    {STEP_LABELS[s.stepType]}
                    {s.branch ? ` → ${BRANCH_LABELS[s.branch]}` : ''}
                    {s.attempts > 1 ? ` · ${formatNumber(s.attempts)} attempts` : ''}
                  </p>
                  <p className="text-xs text-fg-muted">
                    {s.startedAt ? <time dateTime={s.startedAt} title={formatDateTime(s.startedAt)}>{new Date(s.startedAt).toLocaleTimeString()}</time> : 'Not started'}
                    {s.completedAt && s.startedAt ? ` · took ${duration(s.startedAt, s.completedAt) ?? ''}` : ''}
                    {s.dueAt && !s.completedAt ? (
                      <>
                        {' '}· due <When iso={s.dueAt} />
                      </>
                    ) : null}
                  </p>
                  {s.error ? <p className="text-xs text-bad">{s.error}</p> : null}
                  {s.output && Object.keys(s.output).length ? (
                    <details className="text-xs">
                      <summary className="cursor-pointer text-fg-muted">Output</summary>
                      <pre className="mt-1 max-h-40 overflow-auto rounded-md bg-muted p-2">{JSON.stringify(s.output, null, 2)}</pre>
                    </details>
                  ) : null}
                </div>
              </li>
            ))}
          </ol>
          {isActive(x.status) ? (
            <Button variant="secondary" className="text-bad" onClick={() => onCancel(x)}>
              <Ban /> Cancel this execution
            </Button>
          ) : null}
        </div>
      )}
    </aside>
  );
}

export function ExecutionsPage() {
  const project = useProject();
  const notify = useToast();
  const queryClient = useQueryClient();
  const { workflowId = '' } = useParams();
  const [status] = useUrlParam('status');
  const setParams = useSetParams();
  const [pageValue, setPage] = useUrlParam('page');
  const [selected, setSelected] = useUrlParam('execution');
  const page = pageParam(pageValue);
  const [starting, setStarting] = useState(false);
  const [cancelling, setCancelling] = useState<WorkflowExecution | undefined>();
  const [cancellingAll, setCancellingAll] = useState(false);

  const workflow = useQuery({
    queryKey: ['workflows', project.id, 'detail', workflowId],
    queryFn: () => unwrap(api.GET('/workflows/{id}', { params: { path: { id: workflowId } } })),
  });
  const list = useQuery({
    queryKey: ['workflows', project.id, 'executions', workflowId, { status, page }],
    queryFn: () => unwrap(api.GET('/workflows/{id}/executions', { params: { path: { id: workflowId }, query: { page, pageSize: PAGE_SIZE, ...(status && { status }) } } })),
    placeholderData: keepPreviousData,
    // Every second while a run on the page is active; every 5 s while the workflow is enabled (new runs arrive by themselves).
    refetchInterval: (q) => (q.state.data?.data.some((x) => isActive(x.status)) ? 1000 : workflow.data?.enabled ? 5000 : false),
  });
  const stepNames = new Map((workflow.data?.steps ?? []).map((st) => [st.id, st.name]));
  const active = workflow.data?.steps.reduce((n, s) => n + s.stats.waiting, 0) ?? 0;

  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
  const cancel = useMutation({
    mutationFn: (x: WorkflowExecution) => unwrap(api.DELETE('/workflows/{id}/executions/{executionId}', { params: { path: { id: workflowId, executionId: x.id } } })),
    onSuccess: (_, x) => {
      notify({ title: `Execution for ${x.contact.email} cancelled` });
      setCancelling(undefined);
      refresh();
    },
    onError: (e) => notify({ title: 'Could not cancel the execution', description: e.message, tone: 'bad' }),
  });
  const cancelAll = useMutation({
    mutationFn: () => unwrap(api.POST('/workflows/{id}/executions/cancel-all', { params: { path: { id: workflowId } } })),
    onSuccess: (r) => {
      notify({ title: `${plural(r.cancelled, 'execution')} cancelled` });
      setCancellingAll(false);
      refresh();
    },
    onError: (e) => notify({ title: 'Could not cancel the executions', description: e.message, tone: 'bad' }),
  });

  const rows = list.data?.data ?? [];
  return (
    <div>
      <Link to={projectPath(project, `workflows/${workflowId}`)} className="mb-3 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> {workflow.data?.name ?? 'Workflow'}
      </Link>
      <PageHeader
        title="Executions"
        description={workflow.data ? `Runs of “${workflow.data.name}”, one per contact that entered it.` : 'Runs of the workflow, one per contact that entered it.'}
        actions={
          <>
            <Button onClick={() => setStarting(true)}>
              <Play /> Start for a contact
            </Button>
            <ActionsMenu label="More actions" actions={[{ label: 'Cancel all active executions', icon: Ban, onSelect: () => setCancellingAll(true), danger: true }]} />
          </>
        }
      />
      <div className="mb-3">
        <Label htmlFor="execution-status" className="sr-only">
          Status
        </Label>
        <Select id="execution-status" value={status ?? ''} onChange={(e) => setParams({ status: e.target.value, page: undefined })} className="h-9 w-44">
          <option value="">All statuses</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.charAt(0) + s.slice(1).toLowerCase()}
            </option>
          ))}
        </Select>
      </div>
      <div className="flex items-start gap-4">
        <div className="min-w-0 flex-1">
          {list.isError ? (
            <ErrorState error={list.error} onRetry={() => void list.refetch()} />
          ) : !list.isPending && rows.length === 0 ? (
            page > 1 ? (
              <EmptyState title="This page is empty" description="The list got shorter since this page was opened." action={<Button variant="secondary" onClick={() => setPage(undefined)}>First page</Button>} />
            ) : status ? (
              <EmptyState title="No execution with this status" description="Try another status." action={<Button variant="secondary" onClick={() => setParams({ status: undefined, page: undefined })}>All statuses</Button>} />
            ) : (
              <EmptyState
                title="No executions yet"
                description={`An execution starts when “${workflow.data?.triggerConfig.eventName ?? 'the trigger event'}” is tracked for a contact while the workflow is enabled.`}
                action={
                  <Button onClick={() => setStarting(true)}>
                    <Play /> Start for a contact
                  </Button>
                }
              />
            )
          ) : (
            <>
              <Table aria-label="Executions">
                <THead>
                  <tr>
                    <TH>Contact</TH>
                    <TH>Status</TH>
                    <TH>Current step</TH>
                    <TH>Started</TH>
                    <TH>Finished</TH>
                    <TH>
                      <span className="sr-only">Actions</span>
                    </TH>
                  </tr>
                </THead>
                <TBody>
                  {list.isPending ? (
                    <SkeletonRows columns={6} />
                  ) : (
                    rows.map((x) => (
                      <TR key={x.id} onClick={() => setSelected(x.id)} className={cn(selected === x.id && 'bg-accent/5')} aria-selected={selected === x.id}>
                        <TD>
                          <button type="button" className="font-medium hover:underline" onClick={(e) => { e.stopPropagation(); setSelected(x.id); }}>
                            {x.contact.email}
                          </button>
                        </TD>
                        <TD>
                          <StatusBadge status={x.status} />
                        </TD>
                        <TD className="text-fg-muted">{(isActive(x.status) && stepNames.get(x.currentStepId ?? '')) || '—'}</TD>
                        <TD>
                          <When iso={x.startedAt} className="text-fg-muted" />
                        </TD>
                        <TD>{x.completedAt ? <When iso={x.completedAt} className="text-fg-muted" /> : <span className="text-fg-muted">—</span>}</TD>
                        <TD className="text-right" onClick={(e) => e.stopPropagation()}>
                          {isActive(x.status) ? (
                            <Button size="sm" variant="ghost" className="text-bad" aria-label={`Cancel the execution for ${x.contact.email}`} onClick={() => setCancelling(x)}>
                              Cancel
                            </Button>
                          ) : null}
                        </TD>
                      </TR>
                    ))
                  )}
                </TBody>
              </Table>
              {list.data ? <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={(p) => setPage(String(p))} /> : null}
            </>
          )}
        </div>
        {selected ? <Timeline workflowId={workflowId} executionId={selected} onClose={() => setSelected(undefined)} onCancel={setCancelling} /> : null}
      </div>
      <StartDialog workflowId={workflowId} open={starting} onOpenChange={setStarting} onStarted={(id) => setSelected(id)} />
      <ConfirmDialog
        open={cancelling !== undefined}
        onOpenChange={(o) => !o && setCancelling(undefined)}
        title="Cancel this execution?"
        description={`${cancelling?.contact.email ?? 'The contact'} leaves the workflow now: the steps not yet done are skipped. This cannot be undone.`}
        confirmLabel="Cancel execution"
        pending={cancel.isPending}
        onConfirm={() => cancelling && cancel.mutate(cancelling)}
      />
      <ConfirmDialog
        open={cancellingAll}
        onOpenChange={setCancellingAll}
        title="Cancel every active execution?"
        description={`Every running or waiting execution of ${workflow.data?.name ?? 'this workflow'}${active ? ` (${formatNumber(active)} contacts at a step now)` : ''} is cancelled: those contacts leave it and their remaining steps are skipped. The workflow stays ${workflow.data?.enabled ? 'enabled' : 'disabled'}.`}
        confirmLabel="Cancel all executions"
        pending={cancelAll.isPending}
        onConfirm={() => cancelAll.mutate()}
      />
    </div>
  );
}
