import { useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { Field } from '@/components/ui/field';
import { Input, Select, Textarea } from '@/components/ui/input';
import { ALL_OPERATORS, type ConfigDraft, NO_VALUE_OPERATORS, UNIT_OPERATORS, WEBHOOK_METHODS } from './config';
import type { StepType } from './graph';

interface Props {
  type: StepType;
  draft: ConfigDraft;
  onChange: (patch: Partial<ConfigDraft>) => void;
  /** Error message of a field (`config.<key>`): the form's own check or the API's 422. */
  error: (field: string) => string | undefined;
  /** The workflow's trigger event (CONDITION fields sampled from it). */
  triggerEvent: string;
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

function ConditionFields({ draft, onChange, error, triggerEvent }: Omit<Props, 'type'>) {
  const project = useProject();
  const listId = useId();
  const fields = useQuery({
    queryKey: ['workflows', project.id, 'fields', triggerEvent],
    queryFn: () => unwrap(api.GET('/workflows/fields', { params: { query: { eventName: triggerEvent } } })),
    staleTime: 60_000,
  });
  const known = fields.data?.data.find((f) => f.field === draft.field);
  const operators = known?.operators.length ? known.operators : ALL_OPERATORS;
  if (draft.conditionMode === 'tree') {
    return (
      <Field label="Condition tree (JSON)" error={error('config.condition')} hint="A §7 condition tree: {logic, groups: [{filters: [...]}]}">
        <Textarea value={draft.tree} onChange={(e) => onChange({ tree: e.target.value })} rows={10} className="font-mono text-xs" />
      </Field>
    );
  }
  return (
    <>
      <Field label="Field" error={error('config.field')} hint="A contact field (email, subscribed, data.plan), event.<key> or context.<key>">
        <Input value={draft.field} onChange={(e) => onChange({ field: e.target.value })} list={listId} autoComplete="off" />
      </Field>
      <datalist id={listId}>
        {(fields.data?.data ?? [])
          .filter((f) => !f.hint)
          .map((f) => (
            <option key={f.field} value={f.field} />
          ))}
      </datalist>
      <Field label="Operator" error={error('config.operator')}>
        <Select value={draft.operator} onChange={(e) => onChange({ operator: e.target.value })}>
          {(operators.includes(draft.operator) ? operators : [draft.operator, ...operators]).map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </Select>
      </Field>
      {NO_VALUE_OPERATORS.has(draft.operator) ? null : (
        <div className={UNIT_OPERATORS.has(draft.operator) ? 'grid grid-cols-[1fr_auto] items-start gap-2' : 'grid'}>
          <Field label="Value" error={error('config.value')} hint={UNIT_OPERATORS.has(draft.operator) ? undefined : 'Numbers, true, false and null are typed; anything else is text'}>
            <Input value={draft.value} onChange={(e) => onChange({ value: e.target.value })} />
          </Field>
          {UNIT_OPERATORS.has(draft.operator) ? (
            <Field label="Unit" error={error('config.unit')}>
              <Select value={draft.valueUnit || 'days'} onChange={(e) => onChange({ valueUnit: e.target.value as ConfigDraft['valueUnit'] })}>
                <option value="minutes">minutes</option>
                <option value="hours">hours</option>
                <option value="days">days</option>
              </Select>
            </Field>
          ) : null}
        </div>
      )}
    </>
  );
}

/** The config fields of one step type. */
export function StepConfigFields({ type, draft, onChange, error, triggerEvent }: Props) {
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
      return <ConditionFields draft={draft} onChange={onChange} error={error} triggerEvent={triggerEvent} />;
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
