import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { Field } from '@/components/ui/field';
import { Button } from '@/components/ui/button';
import { Input, Select, Textarea } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { ConditionBuilder } from '../segments/ConditionBuilder';
import type { Problem } from '../segments/conditions';
import type { FieldOptions } from '../segments/fieldOptions';
import { type ConfigDraft, WEBHOOK_METHODS } from './config';
import type { StepType } from './graph';

interface Props {
  type: StepType;
  draft: ConfigDraft;
  onChange: (patch: Partial<ConfigDraft>) => void;
  /** Error message of a field (`config.<key>`): the form's own check or the API's 422. */
  error: (field: string) => string | undefined;
  /** CONDITION: what the builder offers (useWorkflowFieldOptions) and its rows' problems (the form's and the API's). */
  fields: FieldOptions;
  problems: readonly Problem[];
}

function TemplatePicker({ value, onChange, error }: { value: string; onChange: (id: string) => void; error: string | undefined }) {
  const project = useProject();
  const [search, setSearch] = useState('');
  const templates = useQuery({
    queryKey: ['templates', project.id, 'picker', search],
    queryFn: () => unwrap(api.GET('/templates', { params: { query: { pageSize: 50, sort: 'name', dir: 'asc', ...(search && { search }) } } })),
  });
  const rows = templates.data?.data ?? [];
  return (
    <div className="grid gap-2">
      <Field label="Find a template">
        <Input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="Search by name" />
      </Field>
      <Field label="Template" error={error ?? (templates.isError ? templates.error.message : undefined)} hint={rows.length === 0 && !templates.isPending ? 'No template matches: create one under Templates first.' : undefined}>
        <Select value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{templates.isPending ? 'Loading…' : 'Choose a template'}</option>
          {rows.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name} — {t.subject}
            </option>
          ))}
        </Select>
      </Field>
    </div>
  );
}

function ConditionFields({ draft, onChange, fields, problems }: Pick<Props, 'draft' | 'onChange' | 'fields' | 'problems'>) {
  if (fields.error) {
    return (
      <div role="alert" className="grid gap-2 rounded-md border border-border p-3 text-sm">
        <p className="text-bad">Could not load the fields a condition can use: {fields.error instanceof Error ? fields.error.message : 'request failed'}</p>
        <Button size="sm" variant="secondary" className="justify-self-start" onClick={fields.refetch}>
          Try again
        </Button>
      </div>
    );
  }
  if (fields.isLoading) return <Skeleton className="h-28 w-full" aria-label="Loading the fields" />;
  return (
    <div className="grid gap-1.5">
      <p className="text-sm font-medium">Condition</p>
      <p className="text-xs text-fg-muted">Contacts matching go on the Yes branch, the others on No. Event data and context are the execution&apos;s.</p>
      <ConditionBuilder value={draft.condition} onChange={(condition) => onChange({ condition })} fields={fields} problems={problems} />
    </div>
  );
}

/** The config fields of one step type. */
export function StepConfigFields({ type, draft, onChange, error, fields, problems }: Props) {
  switch (type) {
    case 'TRIGGER':
      return null;
    case 'SEND_EMAIL':
      return (
        <>
          <TemplatePicker value={draft.templateId} onChange={(templateId) => onChange({ templateId })} error={error('config.templateId')} />
          <Field label="Recipient" error={error('config.recipient.type') ?? error('config.recipient')}>
            <Select value={draft.recipientType} onChange={(e) => onChange({ recipientType: e.target.value as ConfigDraft['recipientType'] })}>
              <option value="CONTACT">The contact</option>
              <option value="CUSTOM">Another address</option>
            </Select>
          </Field>
          {draft.recipientType === 'CUSTOM' ? (
            <Field label="Recipient address" error={error('config.recipient.customEmail')}>
              <Input type="email" value={draft.customEmail} onChange={(e) => onChange({ customEmail: e.target.value })} />
            </Field>
          ) : null}
        </>
      );
    case 'DELAY':
      return (
        <div className="grid grid-cols-[1fr_auto] items-start gap-2">
          <Field label="Wait for" error={error('config.amount')}>
            <Input type="number" min={0} step="any" value={draft.amount} onChange={(e) => onChange({ amount: e.target.value })} />
          </Field>
          <Field label="Unit" error={error('config.unit')}>
            <Select value={draft.unit} onChange={(e) => onChange({ unit: e.target.value as ConfigDraft['unit'] })}>
              <option value="minutes">minutes</option>
              <option value="hours">hours</option>
              <option value="days">days</option>
            </Select>
          </Field>
        </div>
      );
    case 'WAIT_FOR_EVENT':
      return (
        <>
          <Field label="Event to wait for" error={error('config.eventName')}>
            <Input value={draft.eventName} onChange={(e) => onChange({ eventName: e.target.value })} autoComplete="off" />
          </Field>
          <div className="grid grid-cols-[1fr_auto] items-start gap-2">
            <Field label="Timeout" error={error('config.timeout')} hint="Empty: wait without a timeout branch">
              <Input type="number" min={0} step="any" value={draft.timeoutAmount} onChange={(e) => onChange({ timeoutAmount: e.target.value })} />
            </Field>
            <Field label="Timeout unit">
              <Select value={draft.timeoutUnit} onChange={(e) => onChange({ timeoutUnit: e.target.value as ConfigDraft['timeoutUnit'] })}>
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days</option>
              </Select>
            </Field>
          </div>
        </>
      );
    case 'CONDITION':
      return <ConditionFields draft={draft} onChange={onChange} fields={fields} problems={problems} />;
    case 'WEBHOOK':
      return (
        <>
          <Field label="URL" error={error('config.url')} hint="http(s); {{contact.email}}, {{event.key}}… are filled in">
            <Input value={draft.url} onChange={(e) => onChange({ url: e.target.value })} placeholder="https://example.com/hooks/mail" autoComplete="off" />
          </Field>
          <Field label="Method" error={error('config.method')}>
            <Select value={draft.method} onChange={(e) => onChange({ method: e.target.value as ConfigDraft['method'] })}>
              {WEBHOOK_METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </Select>
          </Field>
          <Field label="Headers" error={error('config.headers')} hint="One “Name: value” per line">
            <Textarea value={draft.headers} onChange={(e) => onChange({ headers: e.target.value })} rows={3} className="font-mono text-xs" />
          </Field>
          <Field label="Body (JSON)" error={error('config.body')} hint="Empty: the workflow, execution, contact, event and context">
            <Textarea value={draft.body} onChange={(e) => onChange({ body: e.target.value })} rows={5} className="font-mono text-xs" />
          </Field>
        </>
      );
    case 'UPDATE_CONTACT':
      return (
        <>
          <Field label="Data to set" error={error('config.updates')} hint="One “key = value” per line; null deletes the key">
            <Textarea value={draft.updates} onChange={(e) => onChange({ updates: e.target.value })} rows={4} className="font-mono text-xs" />
          </Field>
          <Field label="Subscription" error={error('config.subscribed') ?? error('config.subscriptionAction')}>
            <Select value={draft.subscription} onChange={(e) => onChange({ subscription: e.target.value as ConfigDraft['subscription'] })}>
              <option value="none">Leave as it is</option>
              <option value="subscribe">Subscribe</option>
              <option value="unsubscribe">Unsubscribe</option>
            </Select>
          </Field>
        </>
      );
    case 'EXIT':
      return (
        <Field label="Reason" error={error('config.reason')} hint="Recorded on the execution">
          <Input value={draft.reason} onChange={(e) => onChange({ reason: e.target.value })} maxLength={500} />
        </Field>
      );
  }
}
