import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ArrowLeft, MoreHorizontal, Pencil, Plus, Trash2, X } from 'lucide-react';
import { DropdownMenu, Switch } from 'radix-ui';
import { type FormEvent, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { projectPath, useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Select } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { formatNumber } from '@/lib/format';
import { emailStatusLabel, emailStatusTime, emailStatusTone, isOnItsWay } from './emails';
import { dataPatch, type EditRow, typeOf, type ValueType, valueToText } from './logic';
import { type Contact, When, Status } from './parts';

type ActivityItem = components['schemas']['ActivityItem'];
type ContactEmail = components['schemas']['ContactEmail'];

const contactKey = (id: string) => ['contacts', 'one', id] as const;

export function ContactPage() {
  const { contactId = '' } = useParams();
  const project = useProject();
  const contact = useQuery({ queryKey: contactKey(contactId), queryFn: () => unwrap(api.GET('/contacts/{id}', { params: { path: { id: contactId } } })) });
  const back = (
    <Link to={projectPath(project, 'contacts')} className="mb-3 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
      <ArrowLeft className="size-4" /> Contacts
    </Link>
  );
  if (contact.isPending) {
    return (
      <div aria-busy="true">
        {back}
        <Skeleton className="mb-2 h-7 w-72" />
        <Skeleton className="mb-6 h-4 w-48" />
        <Skeleton className="h-48 w-full" />
      </div>
    );
  }
  if (contact.isError) {
    return (
      <div>
        {back}
        {contact.error instanceof ApiError && contact.error.status === 404 ? (
          <EmptyState title="No such contact" description="It was deleted, or it belongs to another project." action={<Link to={projectPath(project, 'contacts')} className="text-accent underline">Back to contacts</Link>} />
        ) : (
          <ErrorState error={contact.error} onRetry={() => void contact.refetch()} />
        )}
      </div>
    );
  }
  return (
    <div>
      {back}
      <ContactView contact={contact.data} />
    </div>
  );
}

function ContactView({ contact }: { contact: Contact }) {
  const project = useProject();
  const navigate = useNavigate();
  const notify = useToast();
  const queryClient = useQueryClient();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [editEmail, setEditEmail] = useState(false);

  const setSubscribed = useMutation({
    mutationFn: (subscribed: boolean) => unwrap(api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { subscribed } })),
    onSuccess: (c, subscribed) => {
      queryClient.setQueryData(contactKey(c.id), c);
      void queryClient.invalidateQueries({ queryKey: ['contacts', 'list'] });
      void queryClient.invalidateQueries({ queryKey: ['contacts', 'events', c.id] });
      notify({
        title: subscribed ? 'Subscribed' : 'Unsubscribed',
        description: (
          <span>
            {c.email} {subscribed ? 'receives campaigns again.' : 'no longer receives campaigns.'}{' '}
            <button type="button" className="text-accent underline" onClick={() => setSubscribed.mutate(!subscribed)}>
              Undo
            </button>
          </span>
        ),
      });
    },
    onError: (e) => notify({ title: 'The subscription did not change', description: e.message, tone: 'bad' }),
  });

  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/contacts/{id}', { params: { path: { id: contact.id } } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['contacts'] });
      notify({ title: 'Contact deleted', description: contact.email });
      void navigate(projectPath(project, 'contacts'), { replace: true });
    },
    onError: (e) => notify({ title: 'The contact was not deleted', description: e.message, tone: 'bad' }),
  });

  return (
    <>
      <PageHeader
        title={contact.email}
        description={`Contact since ${new Date(contact.createdAt).toLocaleDateString()}; updated ${new Date(contact.updatedAt).toLocaleString()}.`}
        actions={
          <>
            <label className="flex items-center gap-2 text-sm">
              <Switch.Root
                checked={contact.subscribed}
                disabled={setSubscribed.isPending}
                onCheckedChange={(v) => setSubscribed.mutate(v)}
                aria-label="Subscribed"
                className="relative h-5 w-9 rounded-full border border-border bg-muted outline-none focus-visible:ring-2 focus-visible:ring-accent data-[state=checked]:border-ok data-[state=checked]:bg-ok disabled:opacity-50"
              >
                <Switch.Thumb className="block size-4 translate-x-0.5 rounded-full bg-surface shadow transition-transform data-[state=checked]:translate-x-4" />
              </Switch.Root>
              {contact.subscribed ? <Status tone="ok">Subscribed</Status> : <Status tone="neutral">Unsubscribed</Status>}
            </label>
            <DropdownMenu.Root>
              <DropdownMenu.Trigger asChild>
                <Button variant="secondary" size="icon" aria-label="More actions">
                  <MoreHorizontal />
                </Button>
              </DropdownMenu.Trigger>
              <DropdownMenu.Portal>
                <DropdownMenu.Content align="end" sideOffset={4} className="z-50 min-w-44 rounded-md border border-border bg-surface p-1 shadow-md">
                  <DropdownMenu.Item onSelect={() => setEditEmail(true)} className="flex cursor-pointer items-center gap-2 rounded-sm px-2 py-1.5 text-sm outline-none data-[highlighted]:bg-muted">
                    <Pencil className="size-4" /> Change email
                  </DropdownMenu.Item>
                  <DropdownMenu.Item onSelect={() => setConfirmDelete(true)} className="flex cursor-pointer items-center gap-2 rounded-sm px-2 py-1.5 text-sm text-bad outline-none data-[highlighted]:bg-muted">
                    <Trash2 className="size-4" /> Delete contact
                  </DropdownMenu.Item>
                </DropdownMenu.Content>
              </DropdownMenu.Portal>
            </DropdownMenu.Root>
          </>
        }
      />
      <div className="grid gap-4 lg:grid-cols-2">
        <DataEditor key={JSON.stringify(contact.data)} contact={contact} />
        <EmailList contact={contact} />
        <EventsTimeline contact={contact} />
        <WorkflowActivity contact={contact} />
      </div>
      {editEmail ? <EmailDialog contact={contact} onClose={() => setEditEmail(false)} /> : null}
      <ConfirmDialog
        open={confirmDelete}
        onOpenChange={setConfirmDelete}
        title={`Delete ${contact.email}?`}
        description="The contact, its data and its whole event history are deleted, and its workflow executions end. This cannot be undone."
        confirmLabel={remove.isPending ? 'Deleting…' : 'Delete contact'}
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </>
  );
}

/** Changes the address (PATCH email; 409 when another contact of the project has it). */
function EmailDialog({ contact, onClose }: { contact: Contact; onClose: () => void }) {
  const queryClient = useQueryClient();
  const notify = useToast();
  const [email, setEmail] = useState(contact.email);
  const save = useMutation({
    mutationFn: () => unwrap(api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { email: email.trim() } })),
    onSuccess: (c) => {
      queryClient.setQueryData(contactKey(c.id), c);
      void queryClient.invalidateQueries({ queryKey: ['contacts', 'list'] });
      notify({ title: 'Email changed', description: c.email });
      onClose();
    },
  });
  const error = save.error instanceof ApiError ? save.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Dialog open onOpenChange={(o) => !o && onClose()} title="Change email" description="The contact keeps its data, subscription and history under the new address.">
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Email" error={error?.fieldMessage('email') ?? (error && error.fields.length === 0 ? error.message : undefined)}>
          <Input type="email" value={email} onChange={(e) => setEmail(e.target.value)} required autoFocus />
        </Field>
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" disabled={save.isPending || email.trim() === '' || email.trim().toLowerCase() === contact.email}>
            {save.isPending ? 'Saving…' : 'Change email'}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

const rowsOf = (data: Contact['data']): EditRow[] =>
  Object.entries(data)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => ({ key, type: typeOf(value), text: valueToText(value) }));

/** The data editor: typed values, add and remove keys, saved as one PATCH (removed keys as null). */
function DataEditor({ contact }: { contact: Contact }) {
  const queryClient = useQueryClient();
  const notify = useToast();
  const initial = useMemo(() => rowsOf(contact.data), [contact.data]);
  const [rows, setRows] = useState<EditRow[]>(initial);
  const [showErrors, setShowErrors] = useState(false);
  const { patch, errors } = dataPatch(contact.data, rows);
  const changed = Object.keys(patch).length > 0 || rows.length !== initial.length;
  const save = useMutation({
    mutationFn: () => unwrap(api.PATCH('/contacts/{id}', { params: { path: { id: contact.id } }, body: { data: patch } })),
    onSuccess: (c) => {
      queryClient.setQueryData(contactKey(c.id), c);
      void queryClient.invalidateQueries({ queryKey: ['contacts', 'list'] });
      void queryClient.invalidateQueries({ queryKey: ['contacts', 'fields'] });
      setShowErrors(false);
      notify({ title: 'Data saved', description: c.email });
    },
  });
  const apiError = save.error instanceof ApiError ? save.error : undefined;
  const update = (i: number, next: Partial<EditRow>) => setRows((rs) => rs.map((r, j) => (j === i ? { ...r, ...next } : r)));
  const submit = () => {
    if (Object.keys(errors).length > 0) {
      setShowErrors(true);
      return;
    }
    save.mutate();
  };
  return (
    <Card className="lg:row-span-2">
      <CardHeader>
        <CardTitle>Data</CardTitle>
        <span className="text-xs text-fg-muted">{formatNumber(rows.length)} of 200 keys</span>
      </CardHeader>
      <CardBody className="grid gap-2">
        {rows.length === 0 ? <p className="text-sm text-fg-muted">No data yet. Data keys personalise emails and select contacts in segments.</p> : null}
        {rows.map((row, i) => {
          const message = (showErrors ? errors[i] : undefined) ?? apiError?.fieldMessage(`data.${row.key.trim()}`);
          const label = row.key || `row ${i + 1}`;
          return (
            <div key={i} className="grid gap-1">
              <div className="flex gap-2">
                <Input aria-label={`Key of ${label}`} value={row.key} placeholder="key" onChange={(e) => update(i, { key: e.target.value })} className="w-40 shrink-0 font-mono text-xs" aria-invalid={Boolean(message)} />
                <Select
                  aria-label={`Type of ${label}`}
                  value={row.type}
                  onChange={(e) => {
                    const type = e.target.value as ValueType;
                    update(i, { type, text: type === 'boolean' ? (row.text === 'false' ? 'false' : 'true') : row.text });
                  }}
                  className="w-28 shrink-0"
                >
                  <option value="string">Text</option>
                  <option value="number">Number</option>
                  <option value="boolean">Boolean</option>
                  <option value="date">Date</option>
                </Select>
                {row.type === 'boolean' ? (
                  <Select aria-label={`Value of ${label}`} value={row.text} onChange={(e) => update(i, { text: e.target.value })}>
                    <option value="true">true</option>
                    <option value="false">false</option>
                  </Select>
                ) : (
                  <Input
                    aria-label={`Value of ${label}`}
                    type={row.type === 'number' ? 'number' : 'text'}
                    inputMode={row.type === 'number' ? 'decimal' : undefined}
                    placeholder={row.type === 'date' ? 'YYYY-MM-DD' : undefined}
                    value={row.text}
                    onChange={(e) => update(i, { text: e.target.value })}
                    aria-invalid={Boolean(message)}
                  />
                )}
                <Button variant="ghost" size="icon" aria-label={`Remove ${label}`} onClick={() => setRows((rs) => rs.filter((_, j) => j !== i))}>
                  <X />
                </Button>
              </div>
              {message ? (
                <p role="alert" className="text-xs text-bad">
                  {message}
                </p>
              ) : null}
            </div>
          );
        })}
        {apiError && !rows.some((r) => apiError.fieldMessage(`data.${r.key.trim()}`)) ? (
          <p role="alert" className="text-xs text-bad">
            {apiError.fieldMessage('data') ?? apiError.message}
          </p>
        ) : null}
        <div className="mt-2 flex flex-wrap gap-2">
          <Button variant="secondary" size="sm" onClick={() => setRows((rs) => [...rs, { key: '', type: 'string', text: '' }])}>
            <Plus /> Add key
          </Button>
          <span className="ml-auto flex gap-2">
            <Button
              variant="ghost"
              size="sm"
              disabled={!changed || save.isPending}
              onClick={() => {
                setRows(initial);
                setShowErrors(false);
                save.reset();
              }}
            >
              Discard changes
            </Button>
            <Button size="sm" disabled={!changed || save.isPending} onClick={submit}>
              {save.isPending ? 'Saving…' : 'Save data'}
            </Button>
          </span>
        </div>
      </CardBody>
    </Card>
  );
}

function LoadMore({ query }: { query: { hasNextPage: boolean; isFetchingNextPage: boolean; fetchNextPage: () => unknown } }) {
  if (!query.hasNextPage) return null;
  return (
    <Button size="sm" variant="ghost" disabled={query.isFetchingNextPage} onClick={() => void query.fetchNextPage()}>
      {query.isFetchingNextPage ? 'Loading…' : 'Show older'}
    </Button>
  );
}

function ListSkeleton() {
  return (
    <div className="grid gap-2" aria-hidden>
      <Skeleton className="h-4 w-full" />
      <Skeleton className="h-4 w-5/6" />
      <Skeleton className="h-4 w-2/3" />
    </div>
  );
}

/** Every event of the contact (GET /events/contact/{id}), newest first, paged by cursor. */
function EventsTimeline({ contact }: { contact: Contact }) {
  const project = useProject();
  const events = useInfiniteQuery({
    queryKey: ['contacts', 'events', contact.id],
    queryFn: ({ pageParam }) => unwrap(api.GET('/events/contact/{contactId}', { params: { path: { contactId: contact.id }, query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => (last.hasMore && last.cursor ? last.cursor : undefined),
  });
  const items = events.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Card>
      <CardHeader>
        <CardTitle>Events</CardTitle>
        <span className="flex items-center gap-3 text-xs text-fg-muted">
          {events.data ? <span>{formatNumber(events.data.pages[0]?.total ?? 0)} in all</span> : null}
          <Link to={`${projectPath(project, 'activity')}?contactId=${contact.id}`} className="text-accent underline">
            All activity
          </Link>
        </span>
      </CardHeader>
      <CardBody>
        {events.isPending ? (
          <ListSkeleton />
        ) : events.isError ? (
          <ErrorState error={events.error} onRetry={() => void events.refetch()} />
        ) : items.length === 0 ? (
          <p className="text-sm text-fg-muted">No events yet. Events come from /v1/track, email lifecycle and subscription changes.</p>
        ) : (
          <ol aria-label="Events" className="grid gap-0">
            {items.map((e) => {
              const keys = Object.keys(e.data);
              return (
                <li key={e.id} className="flex items-start gap-3 border-l border-border py-1.5 pl-3">
                  <div className="min-w-0 flex-1">
                    <p className="font-mono text-xs font-medium">{e.name}</p>
                    {keys.length ? (
                      <p className="truncate text-xs text-fg-muted" title={JSON.stringify(e.data)}>
                        {keys
                          .slice(0, 4)
                          .map((k) => `${k}: ${typeof e.data[k] === 'object' ? JSON.stringify(e.data[k]) : String(e.data[k])}`)
                          .join(' · ')}
                        {keys.length > 4 ? ` · +${keys.length - 4}` : ''}
                      </p>
                    ) : null}
                  </div>
                  <When iso={e.createdAt} className="text-xs text-fg-muted" />
                </li>
              );
            })}
          </ol>
        )}
        <LoadMore query={events} />
      </CardBody>
    </Card>
  );
}

const WORKFLOW_TYPES = 'workflow.started,workflow.completed,workflow.failed';

const named = (m: ActivityItem['metadata'], key: string): string | undefined => {
  const v = m[key];
  return v && typeof v === 'object' && 'name' in v && typeof v.name === 'string' ? v.name : undefined;
};

/** The contact's activity of some types since it was created (GET /activity?contactId). */
function useContactActivity(contact: Contact, types: string) {
  return useInfiniteQuery({
    queryKey: ['contacts', 'activity', contact.id, types],
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/activity', { params: { query: { contactId: contact.id, types, startDate: contact.createdAt, limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => (last.hasMore && last.cursor ? last.cursor : undefined),
  });
}

const SOURCE_LABEL: Record<ContactEmail['source'], string> = { SEND: 'API', CAMPAIGN: 'Campaign', WORKFLOW: 'Workflow', TEST: 'Test' };

/** Where an email came from, linked: its campaign, workflow and template pages (a deleted one is only named by its source). */
function EmailOrigin({ email }: { email: ContactEmail }) {
  const project = useProject();
  const links = [
    email.campaign ? { to: `campaigns/${email.campaign.id}`, label: `Campaign “${email.campaign.name || 'Untitled'}”` } : undefined,
    email.workflow ? { to: `workflows/${email.workflow.id}`, label: `Workflow “${email.workflow.name}”` } : undefined,
    email.template ? { to: `templates/${email.template.id}`, label: `Template “${email.template.name || 'Untitled'}”` } : undefined,
  ].filter((l) => l !== undefined);
  return (
    <span className="flex flex-wrap gap-x-2 text-xs text-fg-muted">
      {email.source === 'TEST' || links.length === 0 ? <span>{SOURCE_LABEL[email.source]}</span> : null}
      {links.map((l) => (
        <Link key={l.to} to={projectPath(project, l.to)} className="text-accent hover:underline">
          {l.label}
        </Link>
      ))}
    </span>
  );
}

/** The emails the contact was sent (GET /emails/contact/{id}), newest first with their status, paged by cursor. */
function EmailList({ contact }: { contact: Contact }) {
  const q = useInfiniteQuery({
    queryKey: ['contacts', 'emails', contact.id],
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/emails/contact/{contactId}', { params: { path: { contactId: contact.id }, query: { limit: 20, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    initialPageParam: '',
    getNextPageParam: (last) => (last.hasMore && last.cursor ? last.cursor : undefined),
    // While an email is still on its way, its status is polled (paused in a hidden tab).
    refetchInterval: (query) => (query.state.data?.pages.some((p) => p.data.some(isOnItsWay)) ? 5000 : false),
  });
  const items = q.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Card>
      <CardHeader>
        <CardTitle>Emails</CardTitle>
        {q.data ? <span className="text-xs text-fg-muted">{formatNumber(q.data.pages[0]?.total ?? 0)} in all</span> : null}
      </CardHeader>
      <CardBody>
        {q.isPending ? (
          <ListSkeleton />
        ) : q.isError ? (
          <ErrorState error={q.error} onRetry={() => void q.refetch()} />
        ) : items.length === 0 ? (
          <p className="text-sm text-fg-muted">No email sent to this contact yet. Emails from the API, campaigns, workflows and test sends appear here with their status.</p>
        ) : (
          <ul aria-label="Emails" className="grid max-h-[32rem] gap-2 overflow-y-auto pr-1">
            {items.map((e) => (
              <li key={e.id} className="flex items-start gap-3 text-sm">
                <Badge tone={emailStatusTone(e)} className="w-24 shrink-0 justify-center">
                  {emailStatusLabel(e)}
                </Badge>
                <div className="min-w-0 flex-1">
                  <p className="truncate" title={e.subject}>
                    {e.subject || <span className="text-fg-muted">(no subject)</span>}
                  </p>
                  <EmailOrigin email={e} />
                  {e.error && (e.status === 'FAILED' || e.status === 'CANCELLED' || e.unconfirmed) ? <p className="text-xs text-fg-muted">{e.error}</p> : null}
                </div>
                <When iso={emailStatusTime(e)} className="text-xs text-fg-muted" />
              </li>
            ))}
          </ul>
        )}
        <LoadMore query={q} />
      </CardBody>
    </Card>
  );
}

/** The contact's workflow executions: started, completed or exited, failed. */
function WorkflowActivity({ contact }: { contact: Contact }) {
  const q = useContactActivity(contact, WORKFLOW_TYPES);
  const items = q.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <Card>
      <CardHeader>
        <CardTitle>Workflows</CardTitle>
      </CardHeader>
      <CardBody>
        {q.isPending ? (
          <ListSkeleton />
        ) : q.isError ? (
          <ErrorState error={q.error} onRetry={() => void q.refetch()} />
        ) : items.length === 0 ? (
          <p className="text-sm text-fg-muted">This contact has not entered a workflow.</p>
        ) : (
          <ul aria-label="Workflow executions" className="grid gap-1">
            {items.map((a) => {
              const status = typeof a.metadata.status === 'string' ? a.metadata.status : undefined;
              const detail = typeof a.metadata.error === 'string' ? a.metadata.error : typeof a.metadata.exitReason === 'string' ? a.metadata.exitReason : undefined;
              return (
                <li key={a.id} className="flex items-center gap-3 py-1 text-sm">
                  <Status tone={a.type === 'workflow.failed' ? 'bad' : a.type === 'workflow.completed' ? 'ok' : 'warn'} className="w-20">
                    {a.type.slice('workflow.'.length)}
                  </Status>
                  <span className="min-w-0 flex-1 truncate">
                    {named(a.metadata, 'workflow') ?? 'Workflow'}
                    {a.type === 'workflow.started' && status ? <span className="text-fg-muted"> · now {status.toLowerCase()}</span> : null}
                    {detail ? <span className="text-fg-muted"> · {detail}</span> : null}
                  </span>
                  <When iso={a.timestamp} className="text-xs text-fg-muted" />
                </li>
              );
            })}
          </ul>
        )}
        <LoadMore query={q} />
      </CardBody>
    </Card>
  );
}
