import '@xyflow/react/dist/style.css';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Background, Controls, MarkerType, MiniMap, type Node, type NodeChange, type NodeMouseHandler, ReactFlow, ReactFlowProvider, useNodesState, useReactFlow } from '@xyflow/react';
import { Switch } from 'radix-ui';
import { ArrowLeft, Copy, LayoutGrid, ListChecks, Trash2, X } from 'lucide-react';
import { type FormEvent, useCallback, useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { ApiError, api, unwrap } from '@/api/client';
import { projectPath, useProject } from '@/app/project';
import { currentTheme } from '@/app/theme';
import { ErrorState } from '@/components/page';
import { useToast } from '@/components/toast';
import { Badge } from '@/components/ui/badge';
import { Button } from '@/components/ui/button';
import { ConfirmDialog, Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Textarea } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { formatNumber } from '@/lib/format';
import { cn } from '@/lib/cn';
import { type InsertEdgeData, InsertEdgeView, type InsertFlowEdge, type SlotNodeData, SlotNodeView, type StepNodeData, StepNodeView } from './canvas';
import type { Problem } from '../segments/conditions';
import { type ConfigDraft, conditionProblems, defaultConfig, type FromDraft, fromDraft, type SentCondition, toDraft } from './config';
import { useWorkflowFieldOptions } from './fieldOptions';
import {
  BRANCH_LABELS,
  buildGraph,
  describeStep,
  type InsertAt,
  insertTarget,
  isAutoPosition,
  layoutGraph,
  pinnedPosition,
  STEP_LABELS,
  type StepType,
  typesFor,
} from './graph';
import { ActionsMenu, plural, StepChip, type WorkflowDetail, type WorkflowStep } from './parts';
import { StepConfigFields } from './StepForm';

const nodeTypes = { step: StepNodeView, slot: SlotNodeView };
/** The step colours (STEP_STYLE) as CSS values, for the minimap's SVG. */
const MINIMAP_COLORS: Record<StepType, string> = {
  TRIGGER: 'var(--accent)',
  SEND_EMAIL: 'var(--accent)',
  DELAY: 'var(--warn)',
  WAIT_FOR_EVENT: 'var(--warn)',
  CONDITION: 'var(--fg)',
  WEBHOOK: 'var(--fg-muted)',
  UPDATE_CONTACT: 'var(--ok)',
  EXIT: 'var(--bad)',
};
const edgeTypes = { insert: InsertEdgeView };
const detailKey = (projectId: string, id: string) => ['workflows', projectId, 'detail', id] as const;

/** Field errors: the form's own first, then the API's 422 for the same field. */
function errorsOf(local: Record<string, string>, apiError: unknown) {
  return (field: string) => local[field] ?? apiFieldError(apiError, field);
}

/** The API's message for a field or for a key inside it (`config.updates.email` shows on `config.updates`). */
function apiFieldError(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const f = error.fields.find((x) => x.field === field) ?? error.fields.find((x) => x.field.startsWith(`${field}.`));
  return f ? (f.field === field ? f.message : `${f.field.slice(field.length + 1)}: ${f.message}`) : undefined;
}

/** The API's message when none of its field errors has a field of the form. */
function FormError({ error, shown }: { error: unknown; shown: (field: string) => boolean }) {
  if (!(error instanceof Error)) return null;
  const fields = error instanceof ApiError ? error.fields.filter((f) => !shown(f.field)) : [];
  if (error instanceof ApiError && error.fields.length > 0 && fields.length === 0) return null;
  return (
    <div role="alert" className="grid gap-1 text-sm text-bad">
      <p>{error.message}</p>
      {fields.map((f) => (
        <p key={f.field} className="text-xs">
          {f.field}: {f.message}
        </p>
      ))}
    </div>
  );
}

/**
 * A step form's condition problems: the builder's own (kept from the last check) and the API's 422
 * placed on the rows sent with the last submit.
 */
function useConditionProblems(apiError: unknown) {
  const [local, setLocal] = useState<readonly Problem[]>([]);
  const [sent, setSent] = useState<SentCondition | undefined>();
  const fromApi = apiError instanceof ApiError && sent ? conditionProblems(apiError.fields, sent) : [];
  return {
    problems: [...local, ...fromApi],
    /** After a check of the form: its problems, and (on submit) where the rows went. */
    checked: (out: FromDraft, submitted: boolean) => {
      setLocal(out.condition?.problems ?? []);
      if (submitted) setSent(out.condition?.sent);
    },
  };
}

const FORM_FIELDS = /^(name|config\.(templateId|recipient(\.type|\.customEmail)?|amount|unit|eventName|timeout|field|operator|value(\..*)?|condition(\..*)?|url|method|headers(\..*)?|body(\..*)?|updates(\..*)?|subscribed|subscriptionAction|reason))$/;

// ——— Insert a step ———

function InsertDialog({ workflow, at, onClose, onCreated }: { workflow: WorkflowDetail; at: InsertAt | undefined; onClose: () => void; onCreated: (stepId: string) => void }) {
  const queryClient = useQueryClient();
  const project = useProject();
  const notify = useToast();
  const [type, setType] = useState<StepType>('DELAY');
  const [name, setName] = useState('');
  const [draft, setDraft] = useState<ConfigDraft>(() => toDraft(defaultConfig('DELAY')));
  const [local, setLocal] = useState<Record<string, string>>({});
  const types = at ? typesFor(at) : [];
  const fields = useWorkflowFieldOptions(workflow.triggerConfig.eventName);

  // One request: the server adds the step and links it at `at` in one transaction (or nothing).
  const insert = useMutation({
    mutationFn: async ({ config }: { config: Record<string, unknown> }) => {
      if (!at) throw new Error('Nowhere to insert');
      const body = { type: type as Exclude<StepType, 'TRIGGER'>, name: name.trim() || STEP_LABELS[type], config, position: { x: 0, y: 0 }, ...insertTarget(at, type, config) };
      return unwrap(api.POST('/workflows/{id}/steps', { params: { path: { id: workflow.id } }, body }));
    },
    onSuccess: (step) => onCreated(step.id),
    onError: (e) => {
      // Another edit took the edge or the output first: nothing was added; show the graph as it is now.
      if (e instanceof ApiError && (e.status === 404 || e.status === 409)) notify({ title: 'The workflow changed meanwhile', description: `${e.message}. Nothing was added.`, tone: 'bad' });
    },
    onSettled: () => void queryClient.invalidateQueries({ queryKey: detailKey(project.id, workflow.id) }),
  });

  const error = errorsOf(local, insert.error);
  const condition = useConditionProblems(insert.error);
  // After a first submit, the form re-checks as the user types.
  const [tried, setTried] = useState(false);
  const change = (patch: Partial<ConfigDraft>) => {
    const next = { ...draft, ...patch };
    setDraft(next);
    if (tried) {
      const out = fromDraft(type, next, fields.types);
      setLocal(out.errors);
      condition.checked(out, false);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTried(true);
    const out = fromDraft(type, draft, fields.types);
    setLocal(out.errors);
    condition.checked(out, true);
    if (Object.keys(out.errors).length === 0) insert.mutate({ config: out.config });
  };
  const where =
    at?.kind === 'edge'
      ? `between “${workflow.steps.find((s) => s.id === at.transition.fromStepId)?.name ?? ''}” and “${workflow.steps.find((s) => s.id === at.transition.toStepId)?.name ?? ''}”`
      : at
        ? `after “${workflow.steps.find((s) => s.id === at.fromStepId)?.name ?? ''}”${at.branch ? ` (${BRANCH_LABELS[at.branch]})` : ''}`
        : '';
  return (
    <Dialog
      open={at !== undefined}
      onOpenChange={(o) => {
        if (!o) {
          insert.reset();
          onClose();
        }
      }}
      title="Add a step"
      description={`The new step goes ${where}.`}
    >
      <form onSubmit={submit} className="grid max-h-[70vh] gap-4 overflow-y-auto pr-1">
        <fieldset className="grid gap-1.5">
          <legend className="mb-1.5 text-sm font-medium">Step type</legend>
          <div className="grid grid-cols-2 gap-2">
            {types.map((t) => (
              <label key={t} className={cn('flex cursor-pointer items-center gap-2 rounded-md border px-2 py-1.5 text-sm has-[:focus-visible]:ring-2 has-[:focus-visible]:ring-accent', t === type ? 'border-accent bg-accent/5' : 'border-border hover:bg-muted')}>
                <input
                  type="radio"
                  name="step-type"
                  value={t}
                  checked={t === type}
                  onChange={() => {
                    setType(t);
                    setDraft(toDraft(defaultConfig(t)));
                    setLocal({});
                    condition.checked({ config: {}, errors: {} }, true);
                    insert.reset();
                  }}
                  className="sr-only"
                />
                <StepChip type={t} className="size-6" />
                {STEP_LABELS[t]}
              </label>
            ))}
          </div>
        </fieldset>
        <Field label="Step name" error={error('name')} hint={`Default: ${STEP_LABELS[type]}`}>
          <Input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
        </Field>
        <StepConfigFields type={type} draft={draft} onChange={change} error={error} fields={fields} problems={condition.problems} />
        <FormError error={insert.error} shown={(f) => FORM_FIELDS.test(f)} />
        <div className="flex justify-end gap-2">
          <Button variant="secondary" onClick={onClose}>
            Cancel
          </Button>
          <Button type="submit" disabled={insert.isPending}>
            Add step
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

// ——— Side panel ———

function StatsList({ step }: { step: WorkflowStep }) {
  const s = step.stats;
  const items: [string, number | undefined][] = [
    ['Entered', s.entered],
    ['Waiting', s.waiting],
    ['Completed', s.completed],
    ['Failed', s.failed],
    ['Sent', s.sent],
    ['Delivered', s.delivered],
    ['Opened', s.opened],
    ['Clicked', s.clicked],
    ['Bounced', s.bounced],
  ];
  return (
    <dl className="grid grid-cols-3 gap-2 rounded-md bg-muted p-2 text-xs">
      {items
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => (
          <div key={k}>
            <dt className="text-fg-muted">{k}</dt>
            <dd className="font-semibold tabular-nums">{formatNumber(v ?? 0)}</dd>
          </div>
        ))}
    </dl>
  );
}

function StepPanel({ workflow, step, onClose }: { workflow: WorkflowDetail; step: WorkflowStep; onClose: () => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [name, setName] = useState(step.name);
  const [draft, setDraft] = useState<ConfigDraft>(() => toDraft(step.config));
  const [eventName, setEventName] = useState(workflow.triggerConfig.eventName);
  const [local, setLocal] = useState<Record<string, string>>({});
  const [deleting, setDeleting] = useState(false);
  const fields = useWorkflowFieldOptions(workflow.triggerConfig.eventName);
  const incoming = workflow.transitions.filter((t) => t.toStepId === step.id);
  const outgoing = workflow.transitions.filter((t) => t.fromStepId === step.id);
  const splice = incoming.length === 1 && outgoing.length === 1;

  const save = useMutation({
    mutationFn: async (config: Record<string, unknown> | undefined) => {
      if (step.type === 'TRIGGER' && eventName.trim() !== workflow.triggerConfig.eventName) {
        await unwrap(api.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body: { triggerConfig: { eventName: eventName.trim() } } }));
      }
      return unwrap(api.PATCH('/workflows/{id}/steps/{stepId}', { params: { path: { id: workflow.id, stepId: step.id } }, body: { name: name.trim(), ...(config && { config }) } }));
    },
    onSuccess: () => {
      notify({ title: `${name.trim()} saved` });
      void queryClient.invalidateQueries({ queryKey: detailKey(project.id, workflow.id) });
    },
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/workflows/{id}/steps/{stepId}', { params: { path: { id: workflow.id, stepId: step.id }, query: { splice: splice ? 'true' : 'false' } } })),
    onSuccess: () => {
      notify({ title: `${step.name} deleted` });
      setDeleting(false);
      onClose();
      void queryClient.invalidateQueries({ queryKey: detailKey(project.id, workflow.id) });
    },
    onError: (e) => {
      setDeleting(false);
      notify({ title: `Could not delete ${step.name}`, description: e.message, tone: 'bad' });
    },
  });
  const apiError = save.error instanceof ApiError ? save.error : undefined;
  const error = (field: string) => local[field] ?? apiFieldError(save.error, field) ?? (step.type === 'TRIGGER' && field === 'triggerConfig.eventName' ? apiError?.fieldMessage('eventName') : undefined);
  const condition = useConditionProblems(save.error);
  // After a first submit, the form re-checks as the user types.
  const [tried, setTried] = useState(false);
  const change = (patch: Partial<ConfigDraft>) => {
    const next = { ...draft, ...patch };
    setDraft(next);
    if (tried && step.type !== 'TRIGGER') {
      const out = fromDraft(step.type, next, fields.types);
      setLocal(out.errors);
      condition.checked(out, false);
    }
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTried(true);
    if (step.type === 'TRIGGER') {
      setLocal(eventName.trim() ? {} : { 'triggerConfig.eventName': 'Required' });
      if (eventName.trim()) save.mutate(undefined);
      return;
    }
    const out = fromDraft(step.type, draft, fields.types);
    const { config, errors } = out;
    if (!name.trim()) errors.name = 'Required';
    setLocal(errors);
    condition.checked(out, true);
    if (Object.keys(errors).length === 0) save.mutate(config);
  };
  return (
    <aside aria-label={`Step ${step.name}`} className={cn('flex shrink-0 flex-col border-l border-border bg-surface', step.type === 'CONDITION' ? 'w-[30rem]' : 'w-80')}>
      <div className="flex items-center gap-2 border-b border-border px-4 py-3">
        <StepChip type={step.type} />
        <div className="min-w-0 flex-1">
          <p className="text-xs text-fg-muted">{STEP_LABELS[step.type]}</p>
          <h2 className="truncate font-semibold">{step.name}</h2>
        </div>
        <Button size="icon" variant="ghost" className="size-8" aria-label="Close the step panel" onClick={onClose}>
          <X />
        </Button>
      </div>
      <form onSubmit={submit} className="grid flex-1 content-start gap-4 overflow-y-auto p-4">
        <StatsList step={step} />
        <Field label="Step name" error={error('name')}>
          <Input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} />
        </Field>
        {step.type === 'TRIGGER' ? (
          <Field label="Trigger event" error={error('triggerConfig.eventName')} hint="Contacts enter when this event is tracked for them">
            <Input value={eventName} onChange={(e) => setEventName(e.target.value)} autoComplete="off" />
          </Field>
        ) : (
          <StepConfigFields type={step.type} draft={draft} onChange={change} error={error} fields={fields} problems={condition.problems} />
        )}
        <FormError error={save.error} shown={(f) => FORM_FIELDS.test(f) || f === 'eventName' || f === 'triggerConfig.eventName'} />
        <div className="flex items-center justify-between gap-2">
          {step.type === 'TRIGGER' ? (
            <span />
          ) : (
            <Button variant="ghost" className="text-bad" onClick={() => setDeleting(true)}>
              <Trash2 /> Delete step
            </Button>
          )}
          <Button type="submit" disabled={save.isPending}>
            Save step
          </Button>
        </div>
      </form>
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${step.name}?`}
        description={
          splice
            ? 'The step is removed and its predecessor is linked to its successor. Its counters and the history of its visits are deleted.'
            : `The step and its ${formatNumber(incoming.length + outgoing.length)} connections are removed, so the steps after it are no longer reached from here. Its counters and the history of its visits are deleted.`
        }
        confirmLabel="Delete step"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </aside>
  );
}

function WorkflowPanel({ workflow }: { workflow: WorkflowDetail }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [name, setName] = useState(workflow.name);
  const [description, setDescription] = useState(workflow.description);
  const [allowReentry, setAllowReentry] = useState(workflow.allowReentry);
  const save = useMutation({
    mutationFn: () => unwrap(api.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body: { name: name.trim(), description, allowReentry } })),
    onSuccess: () => {
      notify({ title: 'Workflow saved' });
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
    },
  });
  const error = save.error instanceof ApiError ? save.error : undefined;
  return (
    <aside aria-label="Workflow settings" className="flex w-80 shrink-0 flex-col border-l border-border bg-surface">
      <div className="border-b border-border px-4 py-3">
        <h2 className="font-semibold">Workflow settings</h2>
        <p className="text-xs text-fg-muted">Select a step on the canvas to edit it; use + to add one.</p>
      </div>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
        className="grid content-start gap-4 overflow-y-auto p-4"
      >
        <Field label="Workflow name" error={error?.fieldMessage('name')}>
          <Input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </Field>
        <Field label="Description" error={error?.fieldMessage('description')}>
          <Textarea value={description} onChange={(e) => setDescription(e.target.value)} rows={3} />
        </Field>
        <label className="flex items-center gap-2 text-sm">
          <input type="checkbox" checked={allowReentry} onChange={(e) => setAllowReentry(e.target.checked)} className="size-4" />
          Let a contact go through it more than once
        </label>
        {error && error.fields.length === 0 ? (
          <p role="alert" className="text-sm text-bad">
            {error.message}
          </p>
        ) : null}
        <div className="flex justify-end">
          <Button type="submit" disabled={save.isPending || !name.trim()}>
            Save settings
          </Button>
        </div>
      </form>
    </aside>
  );
}

// ——— Header: enable / disable ———

function EnableToggle({ workflow, onInvalid }: { workflow: WorkflowDetail; onInvalid: (stepId: string | undefined) => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [confirming, setConfirming] = useState(false);
  const next = !workflow.enabled;
  const toggle = useMutation({
    mutationFn: () => unwrap(api.PATCH('/workflows/{id}', { params: { path: { id: workflow.id } }, body: { enabled: next } })),
    onSuccess: (w) => {
      setConfirming(false);
      notify({ title: w.enabled ? `${w.name} is enabled` : `${w.name} is disabled` });
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
    },
  });
  const error = toggle.error instanceof ApiError ? toggle.error : undefined;
  const waiting = workflow.steps.reduce((n, s) => n + s.stats.waiting, 0);
  return (
    <>
      <label className="flex items-center gap-2 text-sm">
        <Switch.Root
          checked={workflow.enabled}
          onCheckedChange={() => {
            toggle.reset();
            setConfirming(true);
          }}
          aria-label={workflow.enabled ? 'Disable the workflow' : 'Enable the workflow'}
          className="relative h-5 w-9 rounded-full bg-muted transition-colors data-[state=checked]:bg-ok focus-visible:ring-2 focus-visible:ring-accent focus-visible:outline-none"
        >
          <Switch.Thumb className="block size-4 translate-x-0.5 rounded-full bg-surface shadow transition-transform data-[state=checked]:translate-x-[18px]" />
        </Switch.Root>
        {workflow.enabled ? <Badge tone="ok">Enabled</Badge> : <Badge>Disabled</Badge>}
      </label>
      <ConfirmDialog
        open={confirming}
        onOpenChange={setConfirming}
        danger={!next}
        title={next ? `Enable ${workflow.name}?` : `Disable ${workflow.name}?`}
        description={
          next ? (
            <>
              From now on, every contact for whom <code className="rounded bg-muted px-1">{workflow.triggerConfig.eventName}</code> is tracked starts this workflow
              {workflow.allowReentry ? ' (again each time).' : ' (once per contact).'}
            </>
          ) : (
            <>
              Contacts stop entering when <code className="rounded bg-muted px-1">{workflow.triggerConfig.eventName}</code> is tracked.{' '}
              {waiting > 0 ? `The ${formatNumber(waiting)} contacts in it now go on to the end.` : 'No contact is in it now.'}
            </>
          )
        }
        confirmLabel={next ? 'Enable workflow' : 'Disable workflow'}
        pending={toggle.isPending}
        onConfirm={() => toggle.mutate()}
      >
        {error ? (
          <div role="alert" className="grid gap-1 text-sm text-bad">
            <p>{error.message}</p>
            {error.fields.map((f) => {
              const stepId = /^steps\.([0-9a-f-]{36})/.exec(f.field)?.[1];
              const step = workflow.steps.find((s) => s.id === stepId);
              return (
                <button
                  key={f.field + f.message}
                  type="button"
                  className="text-left text-xs underline-offset-2 hover:underline"
                  onClick={() => {
                    setConfirming(false);
                    onInvalid(stepId);
                  }}
                >
                  {step ? `${step.name}: ` : ''}
                  {f.message}
                </button>
              );
            })}
          </div>
        ) : null}
      </ConfirmDialog>
    </>
  );
}

// ——— The canvas ———

/** The app's theme, following its switch (the `dark` class on <html>), for the canvas's own colours. */
function subscribeTheme(onChange: () => void): () => void {
  const observer = new MutationObserver(onChange);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['class'] });
  return () => observer.disconnect();
}
const useTheme = () => useSyncExternalStore(subscribeTheme, currentTheme);

function Canvas({ workflow, selectedId, onSelect }: { workflow: WorkflowDetail; selectedId: string | undefined; onSelect: (id: string | undefined) => void }) {
  const project = useProject();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [insertAt, setInsertAt] = useState<InsertAt | undefined>();
  // A new key per opening: the dialog starts from an empty form each time.
  const [insertKey, setInsertKey] = useState(0);
  const onInsert = useCallback((at: InsertAt) => {
    setInsertKey((k) => k + 1);
    setInsertAt(at);
  }, []);
  const pinned = workflow.steps.filter((s) => !isAutoPosition(s.position));

  const computed = useMemo(() => {
    const graph = buildGraph(workflow.steps, workflow.transitions);
    const positions = layoutGraph(graph);
    const names = new Map(workflow.steps.map((s) => [s.id, s.name]));
    const nodes: Node[] = graph.nodes.map((n) => {
      const position = positions.get(n.id) ?? { x: 0, y: 0 };
      if (n.kind === 'slot') {
        const data: SlotNodeData = {
          at: { kind: 'slot', fromStepId: n.fromStepId, branch: n.branch },
          label: `Add a step after ${names.get(n.fromStepId) ?? ''}${n.branch ? ` (${BRANCH_LABELS[n.branch]})` : ''}`,
          onInsert,
        };
        return { id: n.id, type: 'slot', position, data, draggable: false, selectable: false };
      }
      const s = n.step;
      const data: StepNodeData = {
        type: s.type,
        name: s.name,
        summary: describeStep(s.type, s.config, { eventName: workflow.triggerConfig.eventName, templateName: s.template === undefined ? undefined : (s.template?.name ?? null) }),
        stats: s.stats,
        selected: s.id === selectedId,
      };
      return { id: n.id, type: 'step', position, data, selected: s.id === selectedId };
    });
    const edges: InsertFlowEdge[] = graph.edges.map((e) => {
      const transition = workflow.transitions.find((t) => t.id === e.transitionId);
      const data: InsertEdgeData = {
        label: e.label,
        branch: e.branch,
        at: transition ? { kind: 'edge', transition } : undefined,
        describe: `between ${names.get(e.source) ?? ''} and ${names.get(e.target) ?? ''}`,
        onInsert,
      };
      return { id: e.id, source: e.source, target: e.target, type: 'insert', data, markerEnd: { type: MarkerType.ArrowClosed, width: 16, height: 16 } };
    });
    return { nodes, edges };
  }, [workflow, selectedId, onInsert]);

  const [nodes, setNodes, onNodesChange] = useNodesState<Node>(computed.nodes);
  // A refetch (live counters) must not pull a node from under the pointer while it is dragged.
  useEffect(() => setNodes((prev) => computed.nodes.map((n) => {
    const p = prev.find((x) => x.id === n.id);
    return p?.dragging ? { ...n, position: p.position, dragging: true } : n;
  })), [computed.nodes, setNodes]);

  // The whole graph in view when steps come or go (fitView on the first render only knows the trigger).
  const { fitView } = useReactFlow();
  const count = computed.nodes.length;
  useEffect(() => {
    const id = requestAnimationFrame(() => void fitView({ padding: 0.15, maxZoom: 1, duration: 150 }));
    return () => cancelAnimationFrame(id);
  }, [count, fitView]);

  const move = useMutation({
    mutationFn: ({ stepId, position }: { stepId: string; position: { x: number; y: number } }) =>
      unwrap(api.PATCH('/workflows/{id}/steps/{stepId}', { params: { path: { id: workflow.id, stepId } }, body: { position } })),
    onMutate: ({ stepId, position }) => {
      queryClient.setQueryData<WorkflowDetail>(detailKey(project.id, workflow.id), (w) => w && { ...w, steps: w.steps.map((s) => (s.id === stepId ? { ...s, position } : s)) });
    },
    onError: (e) => notify({ title: 'Could not save the position', description: e.message, tone: 'bad' }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: detailKey(project.id, workflow.id) }),
  });
  const tidy = useMutation({
    mutationFn: async () => {
      for (const s of pinned) await unwrap(api.PATCH('/workflows/{id}/steps/{stepId}', { params: { path: { id: workflow.id, stepId: s.id } }, body: { position: { x: 0, y: 0 } } }));
    },
    onSettled: () => void queryClient.invalidateQueries({ queryKey: detailKey(project.id, workflow.id) }),
  });

  const theme = useTheme();
  const onNodeClick: NodeMouseHandler = (_, node) => {
    if (node.type === 'step') onSelect(node.id);
  };
  // Keyboard: Tab to a step, Enter selects it; React Flow reports that (and clicks) as a user change.
  const handleNodesChange = useCallback(
    (changes: NodeChange[]) => {
      onNodesChange(changes);
      const chosen = changes.find((c) => c.type === 'select' && c.selected);
      if (chosen && chosen.type === 'select' && !chosen.id.startsWith('slot:')) onSelect(chosen.id);
    },
    [onNodesChange, onSelect],
  );
  return (
    <div className="relative min-w-0 flex-1 bg-bg">
      <ReactFlow
        nodes={nodes}
        edges={computed.edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={handleNodesChange}
        onNodeClick={onNodeClick}
        onPaneClick={() => onSelect(undefined)}
        onNodeDragStop={(_, node) => {
          if (node.type === 'step') move.mutate({ stepId: node.id, position: pinnedPosition(node.position) });
        }}
        nodesConnectable={false}
        edgesFocusable={false}
        fitView
        fitViewOptions={{ padding: 0.2, maxZoom: 1 }}
        minZoom={0.2}
        colorMode={theme}
        proOptions={{ hideAttribution: true }}
        aria-label="Workflow canvas"
      >
        <Background gap={24} />
        <Controls showInteractive={false} />
        <MiniMap
          pannable
          zoomable
          ariaLabel="Overview of the workflow"
          bgColor="var(--surface)"
          maskColor="color-mix(in srgb, var(--muted) 60%, transparent)"
          nodeColor={(n) => (n.type === 'step' ? MINIMAP_COLORS[(n.data as StepNodeData).type] : 'var(--border)')}
          position="top-right"
          style={{ width: 150, height: 100 }}
          className="!border !border-border"
        />
      </ReactFlow>
      {pinned.length > 0 ? (
        <Button size="sm" variant="secondary" className="absolute top-3 left-3" disabled={tidy.isPending} onClick={() => tidy.mutate()} title="Lay out every step automatically again">
          <LayoutGrid /> Auto layout
        </Button>
      ) : null}
      <InsertDialog key={insertKey} workflow={workflow} at={insertAt} onClose={() => setInsertAt(undefined)} onCreated={(id) => { setInsertAt(undefined); onSelect(id); }} />
    </div>
  );
}

/** The header's "…" menu: duplicate (opens the copy) and delete (after confirming, back to the list). */
function WorkflowMenu({ workflow }: { workflow: WorkflowDetail }) {
  const project = useProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const notify = useToast();
  const [deleting, setDeleting] = useState(false);
  const executions = workflow.steps.find((s) => s.type === 'TRIGGER')?.stats.entered ?? 0;
  const duplicate = useMutation({
    mutationFn: () => unwrap(api.POST('/workflows/{id}/duplicate', { params: { path: { id: workflow.id } } })),
    onSuccess: (copy) => {
      notify({ title: `${copy.name} created`, description: 'The copy is disabled.' });
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      void navigate(projectPath(project, `workflows/${copy.id}`));
    },
    onError: (e) => notify({ title: 'Could not duplicate the workflow', description: e.message, tone: 'bad' }),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/workflows/{id}', { params: { path: { id: workflow.id } } })),
    onSuccess: () => {
      notify({ title: `${workflow.name} deleted` });
      setDeleting(false);
      void queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      void navigate(projectPath(project, 'workflows'));
    },
    onError: (e) => {
      setDeleting(false);
      notify({ title: 'Could not delete the workflow', description: e.message, tone: 'bad' });
    },
  });
  return (
    <>
      <ActionsMenu
        label="More actions"
        actions={[
          { label: 'Duplicate', icon: Copy, onSelect: () => duplicate.mutate(), disabled: duplicate.isPending },
          { label: 'Delete workflow', icon: Trash2, onSelect: () => setDeleting(true), danger: true },
        ]}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${workflow.name}?`}
        description={`Its ${plural(workflow.steps.length, 'step')} and the history of its ${plural(executions, 'execution')} are deleted. This cannot be undone.`}
        confirmLabel="Delete workflow"
        pending={remove.isPending}
        onConfirm={() => remove.mutate()}
      />
    </>
  );
}

export function WorkflowEditorPage() {
  const project = useProject();
  const { workflowId = '' } = useParams();
  const [selectedId, setSelectedId] = useState<string | undefined>();
  const detail = useQuery({
    queryKey: detailKey(project.id, workflowId),
    queryFn: () => unwrap(api.GET('/workflows/{id}', { params: { path: { id: workflowId } } })),
    // Live counters while contacts are in the workflow.
    refetchInterval: (q) => (q.state.data?.steps.some((s) => s.stats.waiting > 0) ? 1000 : false),
  });
  const workflow = detail.data;
  const selected = workflow?.steps.find((s) => s.id === selectedId);

  return (
    <div>
      <Link to={projectPath(project, 'workflows')} className="mb-3 inline-flex items-center gap-1 text-sm text-fg-muted hover:text-fg">
        <ArrowLeft className="size-4" /> Workflows
      </Link>
      {detail.isError ? (
        <ErrorState error={detail.error} onRetry={() => void detail.refetch()} />
      ) : !workflow ? (
        <div aria-busy="true" className="grid gap-4">
          <Skeleton className="h-8 w-64" />
          <Skeleton className="h-[calc(100vh-14rem)] w-full" />
        </div>
      ) : (
        <>
          <header className="mb-4 flex flex-wrap items-start justify-between gap-4">
            <div className="min-w-0">
              <h1 className="truncate text-xl font-semibold">{workflow.name}</h1>
              <p className="mt-1 text-fg-muted">
                Starts when <code className="rounded bg-muted px-1.5 py-0.5 text-sm">{workflow.triggerConfig.eventName}</code> is tracked for a contact
                {workflow.description ? ` — ${workflow.description}` : ''}
              </p>
            </div>
            <div className="flex items-center gap-3">
              <EnableToggle workflow={workflow} onInvalid={setSelectedId} />
              <Link to={projectPath(project, `workflows/${workflow.id}/executions`)} className="inline-flex h-9 items-center gap-2 rounded-md border border-border bg-surface px-4 text-sm font-medium hover:bg-muted">
                <ListChecks className="size-4" /> Executions
              </Link>
              <WorkflowMenu workflow={workflow} />
            </div>
          </header>
          <div className="flex h-[calc(100vh-13rem)] min-h-[520px] overflow-hidden rounded-md border border-border">
            <ReactFlowProvider>
              <Canvas workflow={workflow} selectedId={selected?.id} onSelect={setSelectedId} />
            </ReactFlowProvider>
            {selected ? <StepPanel key={`${selected.id}:${selected.updatedAt}`} workflow={workflow} step={selected} onClose={() => setSelectedId(undefined)} /> : <WorkflowPanel key={workflow.updatedAt} workflow={workflow} />}
          </div>
        </>
      )}
    </div>
  );
}
