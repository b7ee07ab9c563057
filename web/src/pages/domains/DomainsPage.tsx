import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Plus, RefreshCw, Trash2 } from 'lucide-react';
import { type FormEvent, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useProject } from '@/app/project';
import { EmptyState, ErrorState, PageHeader } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardHeader } from '@/components/ui/card';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { CopyButton, TimeAgo } from '../settings/parts';

type Domain = components['schemas']['Domain'];
type DomainRecord = components['schemas']['DomainRecord'];

const domainsKey = (projectId: string) => ['domains', projectId] as const;

function AddDomainDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (open: boolean) => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [name, setName] = useState('');
  const add = useMutation({
    mutationFn: (domain: string) => unwrap(api.POST('/domains', { body: { domain } })),
    onSuccess: (domain) => {
      queryClient.setQueryData<Domain[]>(domainsKey(project.id), (list) => [domain, ...(list ?? []).filter((d) => d.id !== domain.id)]);
      notify({ title: `${domain.domain} added`, description: 'Publish its DKIM record, then verify it.' });
      setName('');
      onOpenChange(false);
    },
  });
  const error = add.error instanceof ApiError ? add.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    add.mutate(name);
  };
  return (
    <Dialog
      open={open}
      onOpenChange={(o) => {
        if (!o) add.reset();
        onOpenChange(o);
      }}
      title="Add a domain"
      description="Emails can be sent from any address on a domain once its DKIM record is published and verified."
    >
      <form onSubmit={submit} className="grid gap-4">
        <Field label="Domain" error={error?.fieldMessage('domain') ?? (error && error.fields.length === 0 ? error.message : undefined)} hint="For example mail.example.com">
          <Input value={name} onChange={(e) => setName(e.target.value)} placeholder="example.com" required autoFocus autoComplete="off" />
        </Field>
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button type="submit" disabled={add.isPending || name.trim() === ''}>
            Add domain
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function RecordStatus({ record }: { record: DomainRecord }) {
  if (record.verified) return <Badge tone="ok">Found</Badge>;
  if (record.error) {
    return (
      <Badge tone={record.required ? 'bad' : 'warn'} title={record.error}>
        {record.error}
      </Badge>
    );
  }
  return <Badge tone="neutral">Not checked</Badge>;
}

function DomainCard({ domain }: { domain: Domain }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [confirmDelete, setConfirmDelete] = useState(false);
  const replace = (next: Domain) => queryClient.setQueryData<Domain[]>(domainsKey(project.id), (list) => list?.map((d) => (d.id === next.id ? next : d)));
  const verify = useMutation({
    mutationFn: () => unwrap(api.GET('/domains/{id}/verify', { params: { path: { id: domain.id } } })),
    onSuccess: (next) => {
      replace(next);
      notify(next.verified ? { title: `${next.domain} is verified` } : { title: `${next.domain} is not verified yet`, description: next.records.find((r) => r.required)?.error ?? 'The DKIM record was not found.', tone: 'bad' });
    },
    onError: (err) => {
      void queryClient.invalidateQueries({ queryKey: domainsKey(project.id) });
      notify({ title: 'Verification failed', description: err.message, tone: 'bad' });
    },
  });
  const inbound = useMutation({
    mutationFn: (inboundEnabled: boolean) => unwrap(api.PATCH('/domains/{id}', { params: { path: { id: domain.id } }, body: { inboundEnabled } })),
    onSuccess: (next) => {
      replace(next);
      notify({ title: next.inboundEnabled ? `Mail to ${next.domain} is received` : `Mail to ${next.domain} is no longer received` });
    },
    onError: (err) => notify({ title: 'Could not change inbound mail', description: err.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/domains/{id}', { params: { path: { id: domain.id } } })),
    onSuccess: () => {
      queryClient.setQueryData<Domain[]>(domainsKey(project.id), (list) => list?.filter((d) => d.id !== domain.id));
      setConfirmDelete(false);
      notify({ title: `${domain.domain} removed` });
    },
    onError: (err) => notify({ title: 'Could not remove the domain', description: err.message, tone: 'bad' }),
  });
  return (
    <Card aria-label={domain.domain} role="region">
      <CardHeader className="flex-wrap">
        <div className="flex min-w-0 items-center gap-3">
          <h2 className="truncate font-semibold">{domain.domain}</h2>
          {domain.verified ? <Badge tone="ok">Verified</Badge> : <Badge tone="warn">Pending</Badge>}
          <span className="text-xs text-fg-muted">
            {domain.lastCheckedAt ? (
              <>
                Checked <TimeAgo iso={domain.lastCheckedAt} />
              </>
            ) : domain.verified ? (
              'Verified by an operator'
            ) : (
              'Not checked yet'
            )}
          </span>
        </div>
        <div className="flex items-center gap-2">
          <Button size="sm" variant="secondary" onClick={() => verify.mutate()} disabled={verify.isPending}>
            <RefreshCw className={verify.isPending ? 'animate-spin' : undefined} /> Verify now
          </Button>
          <Button size="sm" variant="ghost" aria-label={`Delete ${domain.domain}`} onClick={() => setConfirmDelete(true)}>
            <Trash2 /> Delete
          </Button>
        </div>
      </CardHeader>
      <div className="flex flex-wrap items-start gap-3 border-b border-border px-4 py-3 text-sm">
        <label className="flex items-center gap-2 font-medium">
          <input
            type="checkbox"
            className="size-4 accent-accent"
            checked={domain.inboundEnabled}
            disabled={inbound.isPending}
            onChange={(e) => inbound.mutate(e.target.checked)}
          />
          Receive mail
        </label>
        <span className="min-w-0 flex-1 text-xs text-fg-muted">
          {domain.inboundEnabled && !domain.verified ? 'Starts once the domain is verified. ' : ''}
          Mail to any address of {domain.domain} or its subdomains, routed to this server by an MX record, becomes an email.received event on the sender&apos;s contact.
        </span>
      </div>
      <div className="overflow-x-auto">
        <table className="w-full text-sm">
          <thead className="bg-muted text-left text-xs text-fg-muted">
            <tr>
              <th scope="col" className="px-3 py-2 font-medium">Record</th>
              <th scope="col" className="px-3 py-2 font-medium">Name</th>
              <th scope="col" className="px-3 py-2 font-medium">Value</th>
              <th scope="col" className="px-3 py-2 font-medium">Status</th>
            </tr>
          </thead>
          <tbody>
            {domain.records.map((r) => (
              <tr key={r.purpose} className="border-t border-border align-top">
                <td className="px-3 py-2 whitespace-nowrap">
                  <div className="font-medium">{r.purpose}</div>
                  <div className="text-xs text-fg-muted">
                    {r.type} · {r.required ? 'required' : 'recommended'}
                  </div>
                </td>
                <td className="px-3 py-2">
                  <div className="flex items-start gap-1">
                    <code className="min-w-0 flex-1 font-mono text-xs break-all">{r.name}</code>
                    <CopyButton value={r.name} label={`${r.purpose} record name`} />
                  </div>
                </td>
                <td className="px-3 py-2">
                  <div className="flex items-start gap-1">
                    <code className="line-clamp-3 max-w-md min-w-0 flex-1 font-mono text-xs break-all" title={r.value}>
                      {r.value}
                    </code>
                    <CopyButton value={r.value} label={`${r.purpose} record value`} />
                  </div>
                </td>
                <td className="px-3 py-2">
                  <RecordStatus record={r} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <ConfirmDialog
        open={confirmDelete}
        onOpenChange={setConfirmDelete}
        title={`Delete ${domain.domain}?`}
        description="Its DKIM key is deleted with it: mail from this domain is refused until it is added and verified again, with a new DNS record."
        confirmLabel="Delete domain"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </Card>
  );
}

/** /domains: the project's sender domains, their DNS records and verification. */
export function DomainsPage() {
  const project = useProject();
  const [adding, setAdding] = useState(false);
  const domains = useQuery({
    queryKey: domainsKey(project.id),
    queryFn: () => unwrap(api.GET('/domains/project/{projectId}', { params: { path: { projectId: project.id } } })),
  });
  const addButton = (
    <Button onClick={() => setAdding(true)}>
      <Plus /> Add domain
    </Button>
  );
  return (
    <>
      <PageHeader title="Domains" description="The domains this project sends from, with the DNS records that prove them." actions={addButton} />
      {domains.isPending ? (
        <div className="grid gap-4" aria-busy="true">
          <Skeleton className="h-40 w-full" />
          <Skeleton className="h-40 w-full" />
        </div>
      ) : domains.error ? (
        <ErrorState error={domains.error} onRetry={() => void domains.refetch()} />
      ) : domains.data.length === 0 ? (
        <EmptyState title="No domains yet" description="Add the domain your emails come from; publishing one DNS record lets you send from it." action={addButton} />
      ) : (
        <div className="grid gap-4">
          {domains.data.map((d) => (
            <DomainCard key={d.id} domain={d} />
          ))}
        </div>
      )}
      <AddDomainDialog open={adding} onOpenChange={setAdding} />
    </>
  );
}
