import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Plus, RotateCw, Send, Trash2 } from 'lucide-react';
import { type FormEvent, useState } from 'react';
import { useSearchParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import type { components, paths } from '@/api/schema';
import { useProject } from '@/app/project';
import { EmptyState, ErrorState } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Label, Select } from '@/components/ui/input';
import { SkeletonRows, TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { formatNumber } from '@/lib/format';
import { CopyButton, TimeAgo } from './parts';

type Endpoint = components['schemas']['WebhookEndpoint'];
type EventType = paths['/webhook-endpoints']['post']['requestBody']['content']['application/json']['events'][number];
type DeliveryStatus = components['schemas']['WebhookDelivery']['status'];

/** The event types an endpoint subscribes to (docs/webhooks-outgoing.md "Events"). */
const EVENT_TYPES: { type: EventType; label: string }[] = [
  { type: 'email.sent', label: 'Email sent' },
  { type: 'email.delivery', label: 'Email delivered' },
  { type: 'email.open', label: 'Email opened' },
  { type: 'email.click', label: 'Link clicked' },
  { type: 'email.bounce', label: 'Hard bounce' },
  { type: 'email.complaint', label: 'Complaint' },
  { type: 'email.received', label: 'Email received' },
  { type: 'contact.subscribed', label: 'Contact subscribed' },
  { type: 'contact.unsubscribed', label: 'Contact unsubscribed' },
  { type: 'campaign.sent', label: 'Campaign sent' },
  { type: 'workflow.completed', label: 'Workflow completed' },
  { type: 'workflow.failed', label: 'Workflow failed' },
];

const endpointsKey = (projectId: string) => ['webhook-endpoints', projectId] as const;
const deliveriesKey = (projectId: string, id: string) => ['webhook-endpoints', projectId, id, 'deliveries'] as const;

function SecretDialog({ secret, onClose }: { secret: string | undefined; onClose: () => void }) {
  return (
    <Dialog
      open={secret !== undefined}
      onOpenChange={(o) => !o && onClose()}
      title="The endpoint's signing secret"
      description="Copy it now: it is shown only this once. Your receiver checks the X-Signature header of every call with it."
      footer={<Button onClick={onClose}>I have copied it</Button>}
    >
      {secret ? (
        <div className="flex items-center gap-1">
          <code data-testid="webhook-secret" className="min-w-0 flex-1 rounded-md bg-muted px-2 py-1.5 font-mono text-xs break-all select-all">
            {secret}
          </code>
          <CopyButton value={secret} label="signing secret" />
        </div>
      ) : null}
    </Dialog>
  );
}

function EndpointForm({ endpoint, onDone }: { endpoint?: Endpoint; onDone: (secret?: string, id?: string) => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const [url, setUrl] = useState(endpoint?.url ?? '');
  const [events, setEvents] = useState<string[]>(endpoint?.events ?? EVENT_TYPES.slice(0, 6).map((e) => e.type));
  const [enabled, setEnabled] = useState(endpoint?.enabled ?? true);
  const save = useMutation({
    mutationFn: async () => {
      const body = { url, events: events as EventType[], enabled };
      if (endpoint) return { ...(await unwrap(api.PATCH('/webhook-endpoints/{id}', { params: { path: { id: endpoint.id } }, body }))), secret: undefined };
      return unwrap(api.POST('/webhook-endpoints', { body }));
    },
    onSuccess: (saved) => {
      void queryClient.invalidateQueries({ queryKey: endpointsKey(project.id) });
      onDone(saved.secret, saved.id);
    },
  });
  const error = save.error instanceof ApiError ? save.error : undefined;
  const eventsError = error?.fieldMessage('events') ?? error?.fields.find((f) => f.field.startsWith('events.'))?.message;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form onSubmit={submit} className="grid gap-4">
      <Field label="Endpoint URL" error={error?.fieldMessage('url')} hint="Called with POST and a signed JSON body for each event.">
        <Input type="url" value={url} onChange={(e) => setUrl(e.target.value)} required placeholder="https://example.com/webhooks" autoFocus />
      </Field>
      <fieldset className="grid gap-2">
        <legend className="mb-1 text-sm font-medium">Events</legend>
        <div className="grid grid-cols-2 gap-x-4 gap-y-1.5">
          {EVENT_TYPES.map((t) => (
            <label key={t.type} className="flex items-center gap-2 text-sm">
              <input type="checkbox" checked={events.includes(t.type)} onChange={(e) => setEvents((list) => (e.target.checked ? [...list, t.type] : list.filter((x) => x !== t.type)))} />
              {t.label} <span className="font-mono text-xs text-fg-muted">{t.type}</span>
            </label>
          ))}
        </div>
        {eventsError ? (
          <p role="alert" className="text-xs text-bad">
            {eventsError}
          </p>
        ) : null}
      </fieldset>
      <label className="flex items-center gap-2 text-sm">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} /> Enabled
      </label>
      {error && error.fields.length === 0 ? (
        <p role="alert" className="text-sm text-bad">
          {error.message}
        </p>
      ) : null}
      <div className="flex justify-end gap-2">
        <Button variant="secondary" onClick={() => onDone()}>
          Cancel
        </Button>
        <Button type="submit" disabled={save.isPending || events.length === 0}>
          {endpoint ? 'Save endpoint' : 'Add endpoint'}
        </Button>
      </div>
    </form>
  );
}

const deliveryTone = (s: DeliveryStatus) => (s === 'DELIVERED' ? 'ok' : s === 'FAILED' ? 'bad' : 'warn');

function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const project = useProject();
  const [params, setParams] = useSearchParams();
  const status = params.get('status') ?? undefined;
  const cursor = params.get('cursor') ?? undefined;
  // The cursors of the newer pages (space-separated, '-' for the first), so "Newer" goes back one page.
  const back = params.get('back')?.split(' ').filter(Boolean) ?? [];
  const page = (nextCursor: string | undefined, nextBack: string[]) =>
    setParams((current) => {
      const copy = new URLSearchParams(current);
      if (nextCursor) copy.set('cursor', nextCursor);
      else copy.delete('cursor');
      if (nextBack.length > 0) copy.set('back', nextBack.join(' '));
      else copy.delete('back');
      return copy;
    });
  const filter = status === 'PENDING' || status === 'DELIVERED' || status === 'FAILED' ? status : undefined;
  const list = useQuery({
    queryKey: [...deliveriesKey(project.id, endpoint.id), filter, cursor],
    queryFn: () => unwrap(api.GET('/webhook-endpoints/{id}/deliveries', { params: { path: { id: endpoint.id }, query: { limit: 25, ...(filter ? { status: filter } : {}), ...(cursor ? { cursor } : {}) } } })),
    // While deliveries wait for their call or a retry, their outcome comes in by itself.
    refetchInterval: (q) => (q.state.data?.data.some((d) => d.status === 'PENDING') ? 2000 : false),
  });
  return (
    <section aria-labelledby="deliveries-title" className="grid gap-2">
      <div className="flex flex-wrap items-end justify-between gap-2">
        <h3 id="deliveries-title" className="text-sm font-semibold">
          Delivery log
        </h3>
        <div className="flex items-center gap-2">
          <Label htmlFor="delivery-status">Status</Label>
          <Select id="delivery-status" className="h-8 w-36" value={filter ?? ''} onChange={(e) =>
              setParams((current) => {
                const copy = new URLSearchParams(current);
                if (e.target.value) copy.set('status', e.target.value);
                else copy.delete('status');
                copy.delete('cursor');
                copy.delete('back');
                return copy;
              })
            }>
            <option value="">All</option>
            <option value="PENDING">Pending</option>
            <option value="DELIVERED">Delivered</option>
            <option value="FAILED">Failed</option>
          </Select>
        </div>
      </div>
      {list.error ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : (
        <Table aria-label="Delivery log">
          <THead>
            <tr>
              <TH>Event</TH>
              <TH>Status</TH>
              <TH numeric>Attempts</TH>
              <TH numeric>HTTP</TH>
              <TH numeric>Duration</TH>
              <TH>Created</TH>
              <TH>Detail</TH>
            </tr>
          </THead>
          <TBody>
            {list.isPending ? (
              <SkeletonRows rows={4} columns={7} />
            ) : list.data.data.length === 0 ? (
              <tr>
                <td colSpan={7} className="px-3 py-6 text-center text-fg-muted">
                  {filter ? 'No deliveries with this status.' : 'No deliveries yet: send a test ping, or wait for the next event.'}
                </td>
              </tr>
            ) : (
              list.data.data.map((d) => (
                <TR key={d.id} className="align-top">
                  <TD className="font-mono text-xs">{d.eventType}</TD>
                  <TD>
                    <Badge tone={deliveryTone(d.status)}>{d.status.charAt(0) + d.status.slice(1).toLowerCase()}</Badge>
                    {d.status === 'PENDING' && d.nextAttemptAt ? (
                      <div className="mt-1 text-xs text-fg-muted">
                        next <TimeAgo iso={d.nextAttemptAt} />
                      </div>
                    ) : null}
                  </TD>
                  <TD numeric>{formatNumber(d.attempts)}</TD>
                  <TD numeric>{d.statusCode ?? '—'}</TD>
                  <TD numeric>{d.durationMs === null ? '—' : `${formatNumber(d.durationMs)} ms`}</TD>
                  <TD>
                    <TimeAgo iso={d.createdAt} />
                  </TD>
                  <TD className="max-w-sm">
                    <details>
                      <summary className="cursor-pointer text-xs text-fg-muted">{d.error ?? (d.responseExcerpt ? 'Response' : 'Payload')}</summary>
                      {d.responseExcerpt ? <pre className="mt-1 max-h-32 overflow-auto rounded-md bg-muted p-2 text-xs whitespace-pre-wrap">{d.responseExcerpt}</pre> : null}
                      <pre className="mt-1 max-h-48 overflow-auto rounded-md bg-muted p-2 text-xs">{JSON.stringify(d.payload, null, 2)}</pre>
                    </details>
                  </TD>
                </TR>
              ))
            )}
          </TBody>
        </Table>
      )}
      <div className="flex justify-end gap-2">
        {cursor ? (
          <Button size="sm" variant="secondary" onClick={() => page(back.at(-1) === '-' ? undefined : back.at(-1), back.slice(0, -1))}>
            Newer
          </Button>
        ) : null}
        {list.data?.hasMore && list.data.cursor ? (
          <Button size="sm" variant="secondary" onClick={() => page(list.data.cursor ?? undefined, [...back, cursor ?? '-'])}>
            Older
          </Button>
        ) : null}
      </div>
    </section>
  );
}

function EndpointDetail({ endpoint, onSecret, onClose }: { endpoint: Endpoint; onSecret: (secret: string) => void; onClose: () => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [editing, setEditing] = useState(false);
  const [confirm, setConfirm] = useState<'rotate' | 'delete' | undefined>();
  const test = useMutation({
    mutationFn: () => unwrap(api.POST('/webhook-endpoints/{id}/test', { params: { path: { id: endpoint.id } } })),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: deliveriesKey(project.id, endpoint.id) }),
  });
  const rotate = useMutation({
    mutationFn: () => unwrap(api.POST('/webhook-endpoints/{id}/rotate-secret', { params: { path: { id: endpoint.id } } })),
    onSuccess: (res) => {
      setConfirm(undefined);
      onSecret(res.secret);
    },
    onError: (err) => notify({ title: 'Could not rotate the secret', description: err.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/webhook-endpoints/{id}', { params: { path: { id: endpoint.id } } })),
    onSuccess: () => {
      setConfirm(undefined);
      void queryClient.invalidateQueries({ queryKey: endpointsKey(project.id) });
      notify({ title: 'Endpoint deleted' });
      onClose();
    },
    onError: (err) => notify({ title: 'Could not delete the endpoint', description: err.message, tone: 'bad' }),
  });
  return (
    <Card>
      <CardHeader className="flex-wrap">
        <div className="min-w-0">
          <CardTitle className="truncate font-mono">{endpoint.url}</CardTitle>
          <p className="mt-1 text-xs text-fg-muted">{endpoint.events.join(', ')}</p>
        </div>
        <div className="flex flex-wrap items-center gap-2">
          <Button size="sm" onClick={() => test.mutate()} disabled={test.isPending}>
            <Send /> Send test ping
          </Button>
          <Button size="sm" variant="secondary" onClick={() => setEditing(true)}>
            Edit
          </Button>
          <Button size="sm" variant="secondary" onClick={() => setConfirm('rotate')}>
            <RotateCw /> Rotate secret
          </Button>
          <Button size="sm" variant="ghost" onClick={() => setConfirm('delete')}>
            <Trash2 /> Delete
          </Button>
        </div>
      </CardHeader>
      <CardBody className="grid gap-4">
        {endpoint.disabledReason ? (
          <p role="alert" className="rounded-md border border-bad/40 bg-bad/5 px-3 py-2 text-bad">
            Disabled <TimeAgo iso={endpoint.disabledAt} />: {endpoint.disabledReason} Edit it and enable it again once the receiver works.
          </p>
        ) : endpoint.failingSince ? (
          <p className="rounded-md border border-warn/40 bg-warn/5 px-3 py-2 text-warn">
            Calls are failing since <TimeAgo iso={endpoint.failingSince} />; after 24 hours without a success the endpoint is disabled.
          </p>
        ) : null}
        {test.data ? (
          <p role="status" className={test.data.success ? 'text-ok' : 'text-bad'}>
            Test ping {test.data.success ? 'delivered' : 'failed'}: {test.data.statusCode ? `HTTP ${test.data.statusCode}` : (test.data.error ?? 'no answer')} in {formatNumber(test.data.durationMs)} ms
            {!test.data.success && test.data.statusCode && test.data.error ? ` (${test.data.error})` : ''}.
          </p>
        ) : test.error ? (
          <p role="alert" className="text-bad">
            {test.error.message}
          </p>
        ) : null}
        <Deliveries endpoint={endpoint} />
      </CardBody>
      <Dialog open={editing} onOpenChange={setEditing} title="Edit the endpoint">
        <EndpointForm endpoint={endpoint} onDone={() => setEditing(false)} />
      </Dialog>
      <ConfirmDialog
        open={confirm === 'rotate'}
        onOpenChange={(o) => setConfirm(o ? 'rotate' : undefined)}
        title="Rotate the signing secret?"
        description="A new secret signs every later call, retries included: your receiver rejects them until it has the new secret."
        confirmLabel="Rotate secret"
        pending={rotate.isPending}
        onConfirm={() => rotate.mutate()}
      />
      <ConfirmDialog
        open={confirm === 'delete'}
        onOpenChange={(o) => setConfirm(o ? 'delete' : undefined)}
        title="Delete this endpoint?"
        description={`${endpoint.url} receives no more events, and its delivery log is deleted with it.`}
        confirmLabel="Delete endpoint"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </Card>
  );
}

/** Outgoing webhook endpoints (/webhook-endpoints), their secrets, test pings and delivery logs. */
export function WebhooksTab() {
  const project = useProject();
  const [params, setParams] = useSearchParams();
  const selected = params.get('endpoint') ?? undefined;
  // A selection starts its delivery log afresh (no status filter, first page).
  const select = (id: string | undefined) =>
    setParams((current) => {
      const copy = new URLSearchParams(current);
      if (id) copy.set('endpoint', id);
      else copy.delete('endpoint');
      for (const k of ['cursor', 'back', 'status']) copy.delete(k);
      return copy;
    });
  const [adding, setAdding] = useState(false);
  const [secret, setSecret] = useState<string | undefined>();
  const list = useQuery({
    queryKey: endpointsKey(project.id),
    queryFn: () => unwrap(api.GET('/webhook-endpoints')),
    enabled: project.role !== 'MEMBER',
  });
  if (project.role === 'MEMBER') return <p className="text-fg-muted">Only owners and admins manage webhook endpoints: their secrets sign what your systems trust.</p>;
  const addButton = (
    <Button onClick={() => setAdding(true)}>
      <Plus /> Add endpoint
    </Button>
  );
  const current = list.data?.data.find((e) => e.id === selected);
  return (
    <div className="grid gap-6">
      <div className="flex flex-wrap items-start justify-between gap-4">
        <p className="max-w-2xl text-fg-muted">Endpoints receive what happens to your email and contacts as signed JSON calls, retried for 24 hours until they answer 2xx.</p>
        {list.data && list.data.data.length > 0 ? addButton : null}
      </div>
      {list.isPending ? (
        <Table>
          <TBody>
            <SkeletonRows rows={2} columns={4} />
          </TBody>
        </Table>
      ) : list.error ? (
        <ErrorState error={list.error} onRetry={() => void list.refetch()} />
      ) : list.data.data.length === 0 ? (
        <EmptyState title="No webhook endpoints" description="Add a URL of yours to be told when emails are delivered, opened, clicked or bounce." action={addButton} />
      ) : (
        <Table aria-label="Webhook endpoints">
          <THead>
            <tr>
              <TH>URL</TH>
              <TH numeric>Events</TH>
              <TH>Status</TH>
              <TH>Created</TH>
            </tr>
          </THead>
          <TBody>
            {list.data.data.map((ep) => (
              <TR key={ep.id} onClick={() => select(ep.id)} className={ep.id === selected ? 'bg-muted' : undefined}>
                <TD className="max-w-md truncate font-mono text-xs">
                  <button type="button" className="truncate text-left hover:underline" onClick={(e) => (e.stopPropagation(), select(ep.id))}>
                    {ep.url}
                  </button>
                </TD>
                <TD numeric>{formatNumber(ep.events.length)}</TD>
                <TD>{!ep.enabled ? <Badge tone="neutral">Disabled</Badge> : ep.failingSince ? <Badge tone="bad">Failing</Badge> : <Badge tone="ok">Enabled</Badge>}</TD>
                <TD>
                  <TimeAgo iso={ep.createdAt} />
                </TD>
              </TR>
            ))}
          </TBody>
        </Table>
      )}
      {current ? (
        <EndpointDetail
          key={current.id}
          endpoint={current}
          onSecret={setSecret}
          onClose={() => {
            select(undefined);
          }}
        />
      ) : null}
      <Dialog open={adding} onOpenChange={setAdding} title="Add a webhook endpoint">
        <EndpointForm
          onDone={(s, id) => {
            setAdding(false);
            if (s) setSecret(s);
            if (id) select(id);
          }}
        />
      </Dialog>
      <SecretDialog secret={secret} onClose={() => setSecret(undefined)} />
    </div>
  );
}
