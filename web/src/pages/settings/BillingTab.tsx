import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { CreditCard, ExternalLink } from 'lucide-react';
import { type FormEvent, useState } from 'react';
import { useSearchParams } from 'react-router';
import { ApiError } from '@/api/client';
import { useProject } from '@/app/project';
import { ErrorState } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { TBody, TD, TH, THead, TR, Table } from '@/components/ui/table';
import { formatDateTime, formatNumber } from '@/lib/format';
import { type BillingConsumption, type BillingInvoice, type BillingLimits, type CapCategory, type CapUsage, billingCall } from './billing-api';
import { TimeAgo } from './parts';

const CATEGORIES: { key: CapCategory; label: string; hint: string }[] = [
  { key: 'transactional', label: 'Transactional', hint: 'POST /v1/send and campaign test sends' },
  { key: 'campaign', label: 'Campaigns', hint: 'Campaign recipients' },
  { key: 'workflow', label: 'Workflows', hint: 'Workflow email steps' },
];

const money = (cents: number, currency: string) => new Intl.NumberFormat(undefined, { style: 'currency', currency: currency.toUpperCase() }).format(cents / 100);
const monthOf = (iso: string) => new Date(iso).toLocaleDateString(undefined, { month: 'long', year: 'numeric', timeZone: 'UTC' });

function UsageBar({ label, cap }: { label: string; cap: CapUsage }) {
  const tone = cap.isBlocked ? 'bg-bad' : cap.isWarning ? 'bg-warn' : 'bg-accent';
  return (
    <div className="grid gap-1">
      <div className="flex items-baseline justify-between gap-2 text-sm">
        <span className="font-medium">{label}</span>
        <span className="tabular-nums text-fg-muted">
          {formatNumber(cap.usage)} {cap.limit === null ? 'sent, no cap' : `of ${formatNumber(cap.limit)}`}
          {cap.isBlocked ? <Badge tone="bad" className="ml-2">Blocked</Badge> : cap.isWarning ? <Badge tone="warn" className="ml-2">Near the cap</Badge> : null}
        </span>
      </div>
      {cap.limit !== null ? (
        <div className="h-2 overflow-hidden rounded-full bg-muted" role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={cap.limit} aria-valuenow={cap.usage}>
          <div className={`h-full ${tone}`} style={{ width: `${Math.min(100, cap.percentage ?? 0)}%` }} />
        </div>
      ) : null}
    </div>
  );
}

function CapsForm({ limits }: { limits: BillingLimits }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [values, setValues] = useState<Record<CapCategory, string>>(() => ({
    transactional: limits.transactional.limit === null ? '' : String(limits.transactional.limit),
    campaign: limits.campaign.limit === null ? '' : String(limits.campaign.limit),
    workflow: limits.workflow.limit === null ? '' : String(limits.workflow.limit),
  }));
  const save = useMutation({
    mutationFn: () =>
      billingCall<BillingLimits>(project.id, 'billing-limits', {
        method: 'PUT',
        body: Object.fromEntries(CATEGORIES.map((c) => [c.key, values[c.key].trim() === '' ? null : Number(values[c.key])])),
      }),
    onSuccess: (next) => {
      queryClient.setQueryData(['billing', project.id, 'limits'], next);
      notify({ title: 'Monthly caps saved' });
    },
  });
  const error = save.error instanceof ApiError ? save.error : undefined;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <form onSubmit={submit} className="grid gap-4">
      <div className="grid gap-4 sm:grid-cols-3">
        {CATEGORIES.map((c) => (
          <Field key={c.key} label={`${c.label} cap`} error={error?.fieldMessage(c.key)} hint={`${c.hint}. Empty: no cap.`}>
            <Input type="number" min={0} step={1} inputMode="numeric" value={values[c.key]} placeholder="No cap" onChange={(e) => setValues((v) => ({ ...v, [c.key]: e.target.value }))} />
          </Field>
        ))}
      </div>
      {error && error.fields.length === 0 ? (
        <p role="alert" className="text-sm text-bad">
          {error.message}
        </p>
      ) : null}
      <div>
        <Button type="submit" disabled={save.isPending}>
          Save caps
        </Button>
      </div>
    </form>
  );
}

/** Plan, this month's usage and caps, consumption, invoices; checkout and the portal (docs/billing.md). */
export function BillingTab() {
  const project = useProject();
  const notify = useToast();
  const [params] = useSearchParams();
  const checkout = params.get('checkout');
  const isOwner = project.role === 'OWNER';
  const limits = useQuery({
    queryKey: ['billing', project.id, 'limits'],
    queryFn: () => billingCall<BillingLimits>(project.id, 'billing-limits'),
    enabled: project.role !== 'MEMBER',
    // Back from a paid checkout, the subscription arrives by Stripe's webhook a moment later.
    refetchInterval: (q) => (checkout === 'success' && q.state.data?.plan === 'free' && q.state.dataUpdateCount < 30 ? 2000 : false),
  });
  const consumption = useQuery({ queryKey: ['billing', project.id, 'consumption'], queryFn: () => billingCall<BillingConsumption>(project.id, 'billing-consumption'), enabled: project.role !== 'MEMBER' });
  const invoices = useQuery({
    queryKey: ['billing', project.id, 'invoices'],
    queryFn: () => billingCall<{ data: BillingInvoice[]; hasMore: boolean }>(project.id, 'billing-invoices'),
    enabled: project.role !== 'MEMBER',
  });
  const go = useMutation({
    mutationFn: (to: 'checkout' | 'billing-portal') => billingCall<{ url: string }>(project.id, to, { method: 'POST' }),
    onSuccess: ({ url }) => window.location.assign(url),
    onError: (err) => notify({ title: 'Could not open the payment page', description: err.message, tone: 'bad' }),
  });
  if (project.role === 'MEMBER') return <p className="text-fg-muted">Only owners and admins see the project's billing.</p>;
  if (limits.isPending) return <Skeleton className="h-64 w-full" />;
  if (limits.error) return <ErrorState error={limits.error} onRetry={() => void limits.refetch()} />;
  const l = limits.data;
  const subscribed = l.plan === 'subscribed';
  return (
    <div className="grid gap-6">
      {checkout === 'success' ? (
        <p role="status" className="rounded-md border border-ok/40 bg-ok/5 px-4 py-3 text-ok">
          {subscribed ? 'Thank you: the subscription is active.' : 'Payment received: the subscription is being activated…'}
        </p>
      ) : checkout === 'cancelled' ? (
        <p role="status" className="rounded-md border border-border bg-muted px-4 py-3 text-fg-muted">
          The checkout was cancelled: nothing was charged.
        </p>
      ) : null}
      <Card>
        <CardHeader className="flex-wrap">
          <div>
            <div className="flex items-center gap-2">
              <CardTitle>Plan</CardTitle>
              <Badge tone={subscribed ? 'ok' : 'neutral'}>{subscribed ? 'Subscribed' : 'Free'}</Badge>
              {l.subscriptionStatus && l.subscriptionStatus !== 'active' ? <Badge tone="warn">{l.subscriptionStatus.replaceAll('_', ' ')}</Badge> : null}
            </div>
            <p className="mt-1 text-fg-muted">Usage of {monthOf(l.period.start)} (UTC); it starts again on the 1st.</p>
          </div>
          {isOwner ? (
            <div className="flex gap-2">
              {l.subscriptionStatus ? (
                <Button variant="secondary" onClick={() => go.mutate('billing-portal')} disabled={go.isPending}>
                  <ExternalLink /> Manage billing
                </Button>
              ) : null}
              {!subscribed ? (
                <Button onClick={() => go.mutate('checkout')} disabled={go.isPending}>
                  <CreditCard /> Subscribe
                </Button>
              ) : null}
            </div>
          ) : null}
        </CardHeader>
        <CardBody className="grid gap-4">
          {l.freeAllowance ? <UsageBar label="Free allowance (all categories)" cap={l.freeAllowance} /> : null}
          {CATEGORIES.map((c) => (
            <UsageBar key={c.key} label={c.label} cap={l[c.key]} />
          ))}
        </CardBody>
      </Card>
      {isOwner ? (
        <Card>
          <CardHeader>
            <div>
              <CardTitle>Monthly caps</CardTitle>
              <p className="mt-1 text-fg-muted">A spending guard: sending in a category is refused once its cap is reached, until the month ends.</p>
            </div>
          </CardHeader>
          <CardBody>
            <CapsForm key={`${l.transactional.limit}-${l.campaign.limit}-${l.workflow.limit}`} limits={l} />
          </CardBody>
        </Card>
      ) : null}
      <Card>
        <CardHeader>
          <CardTitle>This month</CardTitle>
        </CardHeader>
        <CardBody className="grid gap-2">
          {consumption.error ? (
            <ErrorState error={consumption.error} onRetry={() => void consumption.refetch()} />
          ) : consumption.isPending ? (
            <Skeleton className="h-12 w-full" />
          ) : (
            <>
              <p>
                <span className="font-medium tabular-nums">{formatNumber(consumption.data.emails.total)}</span> emails: {formatNumber(consumption.data.emails.transactional)} transactional,{' '}
                {formatNumber(consumption.data.emails.campaign)} from campaigns, {formatNumber(consumption.data.emails.workflow)} from workflows.
              </p>
              {consumption.data.upcomingInvoice ? (
                <p className="text-fg-muted">
                  Next invoice: {money(consumption.data.upcomingInvoice.amountDue, consumption.data.upcomingInvoice.currency)}
                  {consumption.data.upcomingInvoice.nextPaymentAttempt ? (
                    <>
                      , charged <TimeAgo iso={consumption.data.upcomingInvoice.nextPaymentAttempt} />
                    </>
                  ) : null}
                  .
                </p>
              ) : null}
            </>
          )}
        </CardBody>
      </Card>
      <section aria-labelledby="invoices-title" className="grid gap-2">
        <h2 id="invoices-title" className="text-sm font-semibold">
          Invoices
        </h2>
        {invoices.error ? (
          <ErrorState error={invoices.error} onRetry={() => void invoices.refetch()} />
        ) : invoices.data && invoices.data.data.length === 0 ? (
          <p className="text-fg-muted">No invoices yet.</p>
        ) : (
          <Table aria-label="Invoices">
            <THead>
              <tr>
                <TH>Invoice</TH>
                <TH>Date</TH>
                <TH>Status</TH>
                <TH numeric>Total</TH>
                <TH>
                  <span className="sr-only">Links</span>
                </TH>
              </tr>
            </THead>
            <TBody>
              {invoices.data?.data.map((i) => (
                <TR key={i.id}>
                  <TD>{i.number ?? i.id}</TD>
                  <TD>
                    <span title={formatDateTime(i.createdAt)}>{new Date(i.createdAt).toLocaleDateString()}</span>
                  </TD>
                  <TD>{i.status ? <Badge tone={i.status === 'paid' ? 'ok' : i.status === 'open' ? 'warn' : 'neutral'}>{i.status}</Badge> : '—'}</TD>
                  <TD numeric>{money(i.total, i.currency)}</TD>
                  <TD className="text-right">
                    {i.hostedInvoiceUrl ? (
                      <a className="text-accent underline" href={i.hostedInvoiceUrl} target="_blank" rel="noreferrer">
                        View
                      </a>
                    ) : null}
                    {i.pdfUrl ? (
                      <a className="ml-3 text-accent underline" href={i.pdfUrl} target="_blank" rel="noreferrer">
                        PDF
                      </a>
                    ) : null}
                  </TD>
                </TR>
              ))}
            </TBody>
          </Table>
        )}
        {invoices.data?.hasMore ? <p className="text-xs text-fg-muted">The 24 newest invoices are shown; the billing portal has them all.</p> : null}
      </section>
    </div>
  );
}
