import { Switch } from 'radix-ui';
import { type FormEvent, useId, useMemo, useState } from 'react';
import { useBlocker } from 'react-router';
import { ApiError } from '@/api/client';
import { ErrorState } from '@/components/page';
import { Button } from '@/components/ui/button';
import { Card, CardBody, CardHeader, CardTitle } from '@/components/ui/card';
import { ConfirmDialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input, Label, Textarea } from '@/components/ui/input';
import { Skeleton } from '@/components/ui/skeleton';
import { ConditionBuilder } from './ConditionBuilder';
import { LiveCount } from './LiveCount';
import { type ApiTree, type Card as ConditionCard, cardToTree, countRows, type PathIndex, placeApiErrors, validateCard } from './conditions';
import { useFieldOptions } from './fieldOptions';

export interface SegmentValues {
  type: 'DYNAMIC' | 'STATIC';
  name: string;
  description: string;
  trackMembership: boolean;
  /** Absent for STATIC segments (their members are listed, not described). */
  condition?: ApiTree;
}

interface SegmentFormProps {
  initial: { type: 'DYNAMIC' | 'STATIC'; name: string; description: string; trackMembership: boolean; card?: ConditionCard };
  /** A new segment: its type can be chosen (a saved segment keeps its type). */
  chooseType?: boolean;
  /** The segment being edited (it cannot reference itself). */
  segmentId?: string;
  submitLabel: string;
  pending: boolean;
  /** The last submit's failure (422 field errors are shown beside their fields and rows). */
  error: unknown;
  onSubmit: (values: SegmentValues) => void;
  /** Editing a saved segment: the form tells whether it has unsaved changes (remount it after a save). */
  editing?: boolean;
  /** The form's values were saved: leaving the page no longer asks for confirmation. */
  saved?: boolean;
}

/** Name, description, tracking and the condition of a segment: the form of the new and edit pages. */
export function SegmentForm({ initial, segmentId, submitLabel, pending, error, onSubmit, editing = false, chooseType = false, saved = false }: SegmentFormProps) {
  const fields = useFieldOptions(segmentId);
  const [type, setType] = useState(initial.type);
  const [name, setName] = useState(initial.name);
  const [description, setDescription] = useState(initial.description);
  const [track, setTrack] = useState(initial.trackMembership);
  const [card, setCard] = useState(initial.card);
  const [attempted, setAttempted] = useState(false);
  const [paths, setPaths] = useState<PathIndex>(new Map());
  const switchId = useId();

  const apiError = error instanceof ApiError ? error : undefined;
  const dynamic = type === 'DYNAMIC' && card !== undefined;
  const local = useMemo(() => (card && type === 'DYNAMIC' ? validateCard(card, fields.types) : []), [card, type, fields.types]);
  const remote = useMemo(() => (apiError && card ? placeApiErrors(apiError.fields, 'condition', paths, card.id) : []), [apiError, card, paths]);
  const problems = attempted ? [...local, ...remote] : remote;

  const current: SegmentValues = useMemo(
    () => ({ type, name, description, trackMembership: track, ...(dynamic ? { condition: cardToTree(card, fields.types).tree } : {}) }),
    [type, name, description, track, card, dynamic, fields.types],
  );
  const start = useMemo(
    () => JSON.stringify({ ...initial, card: undefined, ...(initial.card ? { condition: cardToTree(initial.card, fields.types).tree } : {}) }),
    [initial, fields.types],
  );
  const changed = JSON.stringify({ ...current, card: undefined }) !== start;
  const dirty = editing ? changed : true;
  // Leaving the page (another path; tabs and pages of this one keep the form) with changes asks first.
  const blocker = useBlocker(
    ({ currentLocation, nextLocation }) =>
      changed && !saved && currentLocation.pathname !== nextLocation.pathname && !(nextLocation.state as { discard?: boolean } | null)?.discard,
  );

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setAttempted(true);
    if (local.length > 0 || !name.trim()) return;
    if (dynamic) setPaths(cardToTree(card, fields.types).paths);
    onSubmit({ ...current, name: name.trim() });
  };

  const otherError = apiError && apiError.fields.length > 0 ? undefined : error;
  const nameError = apiError?.fieldMessage('name') ?? (attempted && !name.trim() ? 'Enter a name' : undefined);

  return (
    <form onSubmit={submit} className="grid gap-6" noValidate>
      <ConfirmDialog
        open={blocker.state === 'blocked'}
        onOpenChange={(open) => {
          if (!open && blocker.state === 'blocked') blocker.reset();
        }}
        title="Leave without saving?"
        description={editing ? 'Your changes to this segment are not saved and will be lost.' : 'The segment has not been created; what you entered will be lost.'}
        confirmLabel="Leave"
        onConfirm={() => blocker.state === 'blocked' && blocker.proceed()}
      />
      <Card>
        <CardHeader>
          <CardTitle>Details</CardTitle>
        </CardHeader>
        <CardBody className="grid gap-4 md:grid-cols-2">
          {chooseType ? (
            <fieldset className="grid gap-2 md:col-span-2">
              <legend className="mb-1 text-sm font-medium">Type</legend>
              <div className="flex flex-wrap gap-3">
                {(
                  [
                    ['DYNAMIC', 'Dynamic', 'Contacts matching conditions, kept up to date'],
                    ['STATIC', 'Static', 'A fixed list of contacts you add by email'],
                  ] as const
                ).map(([value, label, hint]) => (
                  <label key={value} className="flex min-w-64 flex-1 cursor-pointer items-start gap-2 rounded-md border border-border p-3 has-[:checked]:border-accent">
                    <input type="radio" name="segment-type" value={value} checked={type === value} onChange={() => setType(value)} className="mt-1 accent-accent" />
                    <span className="grid gap-0.5">
                      <span className="text-sm font-medium">{label}</span>
                      <span className="text-xs text-fg-muted">{hint}</span>
                    </span>
                  </label>
                ))}
              </div>
            </fieldset>
          ) : null}
          <Field label="Name" error={nameError}>
            <Input value={name} onChange={(e) => setName(e.target.value)} maxLength={100} required autoFocus={!segmentId} />
          </Field>
          <Field label="Description" error={apiError?.fieldMessage('description')} hint="Optional: what the segment is for.">
            <Textarea value={description} onChange={(e) => setDescription(e.target.value)} maxLength={500} rows={2} className="min-h-9" />
          </Field>
          {type === 'DYNAMIC' ? (
          <div className="flex items-start gap-3 md:col-span-2">
            <Switch.Root
              id={switchId}
              checked={track}
              onCheckedChange={setTrack}
              aria-describedby={`${switchId}-hint`}
              className="relative mt-0.5 inline-flex h-5 w-9 shrink-0 items-center rounded-full border border-border bg-muted transition-colors data-[state=checked]:bg-accent"
            >
              <Switch.Thumb className="block size-4 translate-x-0.5 rounded-full bg-surface shadow transition-transform data-[state=checked]:translate-x-4" />
            </Switch.Root>
            <div className="grid gap-0.5">
              <Label htmlFor={switchId}>Track membership</Label>
              <p id={`${switchId}-hint`} className="text-xs text-fg-muted">
                Records an entry or exit event each time a contact joins or leaves (computed every 5 minutes), so workflows can start on them.
              </p>
            </div>
          </div>
          ) : null}
        </CardBody>
      </Card>

      {dynamic ? (
        <Card>
          <CardHeader>
            <CardTitle>Condition</CardTitle>
            <LiveCount condition={local.length === 0 ? current.condition : undefined} />
          </CardHeader>
          <CardBody className="grid gap-3">
            {fields.error ? <ErrorState error={fields.error} onRetry={fields.refetch} /> : null}
            {fields.isLoading ? (
              <div className="grid gap-2" aria-busy="true">
                <Skeleton className="h-9 w-full" />
                <Skeleton className="h-9 w-2/3" />
              </div>
            ) : (
              <ConditionBuilder value={card} onChange={setCard} fields={fields} problems={problems} disabled={pending} />
            )}
            <p className="text-xs text-fg-muted">{countRows(card) === 1 ? '1 condition' : `${countRows(card)} conditions`}. Data keys show the type most contacts have; numbers compare numerically, text case-sensitively for “is” and case-insensitively for “contains”.</p>
          </CardBody>
        </Card>
      ) : null}

      {otherError ? <ErrorState error={otherError} /> : null}
      {attempted && local.length > 0 ? (
        <p role="alert" className="text-sm text-bad">
          {local.length === 1 ? 'One condition needs attention' : `${local.length} conditions need attention`} before saving.
        </p>
      ) : null}
      <div className="flex items-center justify-end gap-3">
        {editing && dirty ? <span className="text-sm text-fg-muted">Unsaved changes</span> : null}
        <Button type="submit" disabled={pending || (editing && !dirty)}>
          {pending ? 'Saving…' : submitLabel}
        </Button>
      </div>
    </form>
  );
}
