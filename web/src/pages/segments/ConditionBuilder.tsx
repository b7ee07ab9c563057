import { useQuery } from '@tanstack/react-query';
import { Plus, Trash2 } from 'lucide-react';
import { Fragment, useId, useState } from 'react';
import { api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import { Button } from '@/components/ui/button';
import { Input, Select } from '@/components/ui/input';
import { cn } from '@/lib/cn';
import { formatNumber } from '@/lib/format';
import {
  ACTIVITY_OPERATORS,
  addCard,
  addFilter,
  type Card,
  type CardPath,
  type ConditionMode,
  type FilterRow,
  isDateField,
  type Logic,
  type Operator,
  operatorLabel,
  operatorsFor,
  type Problem,
  removeItem,
  setLogic,
  type Unit,
  UNITS,
  updateItem,
  valueInput,
  withField,
  withOperator,
} from './conditions';
import type { FieldGroup, FieldOptions } from './fieldOptions';

/** The picker's value of a group's "other key" entry. */
const otherValue = (groupIndex: number) => `__other:${groupIndex}`;
/** Workflow mode: a tracked event's picker value (its field `event.<name>` is also an event data key's form). */
const TRACKED = '~';

interface BuilderProps {
  value: Card;
  onChange: (next: Card) => void;
  fields: FieldOptions;
  /** Problems to show beside their rows and cards (the builder's own checks, the API's 422). */
  problems?: readonly Problem[];
  disabled?: boolean;
}

/**
 * The condition builder (UI.md "Segment builder"): cards of "All of" / "Any of" over filter rows
 * and nested cards. Each row: a field (contact fields, data keys with their seen type, events,
 * email engagement, segments), the operators of that field's type, and the value input the
 * operator needs (text, number, date, true/false, a duration with its unit, or none). Edits go
 * through conditions.ts; the page turns the card into the API's tree with `cardToTree`.
 *
 * `fields.mode` 'workflow' (a workflow CONDITION step, web/src/pages/workflows/fieldOptions.ts)
 * adds the execution's fields: its groups may list `event.<key>` / `context.<key>` options and
 * "other key" entries with those prefixes, while a group marked `tracked` keeps `event.<name>` a
 * tracked event (activity operators); pass the same mode to cardToTree/validateCard.
 *
 * Reuse (a campaign's FILTERED audience): `const fields = useFieldOptions()`, state
 * `treeToCard(stored)` or `emptyCard()`, `<ConditionBuilder value={card} onChange={setCard}
 * fields={fields} problems={...} />`; on submit `validateCard(card, fields.types)` (block when not
 * empty) and send `cardToTree(card, fields.types).tree`, keeping its `paths` to place a 422 with
 * `placeApiErrors(error.fields, 'audienceCondition', paths, card.id)`.
 */
export function ConditionBuilder({ value, onChange, fields, problems = [], disabled }: BuilderProps) {
  return <CardView card={value} path={[]} root={value} onChange={onChange} fields={fields} problems={problems} disabled={disabled} />;
}

interface CardViewProps {
  card: Card;
  path: CardPath;
  root: Card;
  onChange: (next: Card) => void;
  fields: FieldOptions;
  problems: readonly Problem[];
  disabled?: boolean;
  onRemove?: () => void;
}

const pathLabel = (path: CardPath) => path.map((i) => i + 1).join('.');

function CardView({ card, path, root, onChange, fields, problems, disabled, onRemove }: CardViewProps) {
  const nested = path.length > 0;
  const own = problems.filter((p) => p.id === card.id);
  const name = nested ? `Group ${pathLabel(path)}` : 'Conditions';
  return (
    <section role="group" aria-label={name} className={cn('grid gap-3 rounded-md border border-border p-3', nested ? 'bg-muted/40' : 'bg-surface')}>
      <div className="flex flex-wrap items-center gap-2">
        <span className="text-sm text-fg-muted">{nested ? 'Matching' : 'Contacts matching'}</span>
        <Select
          aria-label={`${name}: match`}
          className="h-8 w-auto"
          value={card.logic}
          disabled={disabled}
          onChange={(e) => onChange(setLogic(root, path, e.target.value as Logic))}
        >
          <option value="AND">All of</option>
          <option value="OR">Any of</option>
        </Select>
        <span className="text-sm text-fg-muted">the following</span>
        {onRemove ? (
          <Button variant="ghost" size="sm" className="ml-auto" onClick={onRemove} disabled={disabled} aria-label={`Remove ${name.toLowerCase()}`}>
            <Trash2 aria-hidden />
          </Button>
        ) : null}
      </div>
      {card.items.length === 0 && !nested ? (
        <p className="text-sm text-fg-muted">{fields.mode === 'workflow' ? 'No conditions yet: add one.' : 'No conditions: every contact of the project matches.'}</p>
      ) : null}
      {card.items.map((item, i) => (
        <Fragment key={item.id}>
          {i > 0 ? (
            <span aria-hidden className="text-xs font-medium tracking-wide text-fg-muted uppercase">
              {card.logic === 'AND' ? 'and' : 'or'}
            </span>
          ) : null}
          {item.kind === 'card' ? (
            <CardView
              card={item}
              path={[...path, i]}
              root={root}
              onChange={onChange}
              fields={fields}
              problems={problems}
              disabled={disabled}
              onRemove={() => onChange(removeItem(root, path, i))}
            />
          ) : (
            <RowView
              row={item}
              label={`Condition ${pathLabel([...path, i])}`}
              fields={fields}
              problems={problems.filter((p) => p.id === item.id)}
              disabled={disabled}
              onChange={(fn) => onChange(updateItem(root, path, i, fn))}
              onRemove={() => onChange(removeItem(root, path, i))}
            />
          )}
        </Fragment>
      ))}
      {own.map((p) => (
        <p key={p.message} role="alert" className="text-xs text-bad">
          {p.message}
        </p>
      ))}
      <div className="flex flex-wrap gap-2">
        <Button variant="secondary" size="sm" disabled={disabled} onClick={() => onChange(addFilter(root, path))} aria-label={`Add condition to ${name.toLowerCase()}`}>
          <Plus aria-hidden /> Condition
        </Button>
        <Button variant="ghost" size="sm" disabled={disabled || path.length >= 7} onClick={() => onChange(addCard(root, path))} aria-label={`Add group to ${name.toLowerCase()}`}>
          <Plus aria-hidden /> Group
        </Button>
      </div>
    </section>
  );
}

interface RowViewProps {
  row: FilterRow;
  label: string;
  fields: FieldOptions;
  problems: readonly Problem[];
  disabled?: boolean;
  onChange: (fn: (row: FilterRow) => FilterRow) => void;
  onRemove: () => void;
}

/** In workflow mode, whether a group holds the kind of `event.` field the row is (tracked event or event data). */
function sameEventKind(group: FieldGroup, row: FilterRow, mode: ConditionMode): boolean {
  if (mode !== 'workflow' || !row.field.startsWith('event.')) return true;
  return Boolean(group.tracked) === (row.operator !== '' && ACTIVITY_OPERATORS.includes(row.operator));
}

const optionValue = (group: FieldGroup, field: string, mode: ConditionMode) => (mode === 'workflow' && group.tracked ? `${TRACKED}${field}` : field);

/** The picker entry showing a row: a listed field of its group, else its group's "other key" entry, else the field itself. */
function pickerValue(row: FilterRow, fields: FieldOptions, mode: ConditionMode): string {
  for (const g of fields.groups) {
    if (sameEventKind(g, row, mode) && g.options.some((o) => o.value === row.field)) return optionValue(g, row.field, mode);
  }
  const other = fields.groups.findIndex((g) => g.other && row.field.startsWith(g.other.prefix) && sameEventKind(g, row, mode));
  return other >= 0 ? otherValue(other) : row.field;
}

function RowView({ row, label, fields, problems, disabled, onChange, onRemove }: RowViewProps) {
  const { types } = fields;
  const mode = fields.mode ?? 'segment';
  const picked = pickerValue(row, fields, mode);
  const otherGroup = fields.groups.find((_, i) => picked === otherValue(i));
  const other = otherGroup?.other;
  const ops = operatorsFor(row.field, types, row.operator, mode);
  const input = valueInput(row.field, row.operator, types, mode);
  const dateLike = isDateField(row.field, types, mode, row.operator);
  const problem = (part: Problem['part']) => problems.find((p) => p.part === part)?.message;
  const invalid = (part: Problem['part']) => (problem(part) ? true : undefined);
  const segmentMissing = row.field.startsWith('segment.') && !fields.groups.some((g) => g.options.some((o) => o.value === row.field));

  const pick = (value: string) => {
    const groupIndex = fields.groups.findIndex((_, i) => value === otherValue(i));
    const group = fields.groups[groupIndex];
    const tracked = mode === 'workflow' && (value.startsWith(TRACKED) || Boolean(group?.tracked));
    const field = group?.other ? group.other.prefix : tracked ? value.slice(TRACKED.length) : value;
    onChange((r) => {
      if (mode !== 'workflow' || !field.startsWith('event.')) return withField(r, field, types, mode);
      // The operator says which `event.` this is: an activity one for a tracked event, none yet for event data.
      const activity = r.operator !== '' && ACTIVITY_OPERATORS.includes(r.operator);
      const operator = tracked ? (activity ? r.operator : 'triggered') : activity ? '' : r.operator;
      return withField({ ...r, operator }, field, types, mode);
    });
  };

  return (
    <div role="group" aria-label={label} className="grid gap-1">
      <div className="flex flex-wrap items-start gap-2">
        <Select aria-label="Field" className="h-9 w-56" value={picked} disabled={disabled} aria-invalid={invalid('field')} onChange={(e) => pick(e.target.value)}>
          <option value="" disabled>
            Choose a field…
          </option>
          {fields.groups.map((g, i) => (
            <optgroup key={g.label} label={g.label}>
              {g.options.map((o) => (
                <option key={o.value} value={optionValue(g, o.value, mode)}>
                  {o.label}
                </option>
              ))}
              {g.other ? <option value={otherValue(i)}>{g.other.label}</option> : null}
              {g.label === 'Segments' && segmentMissing ? <option value={row.field}>Deleted segment</option> : null}
            </optgroup>
          ))}
        </Select>
        {other ? (
          <Input
            aria-label={other.inputLabel}
            className="w-40"
            placeholder={other.placeholder}
            value={row.field.slice(other.prefix.length)}
            disabled={disabled}
            aria-invalid={invalid('field')}
            onChange={(e) => onChange((r) => withField(r, `${other.prefix}${e.target.value}`, types, mode))}
          />
        ) : null}
        {ops.length > 0 ? (
          <Select
            aria-label="Operator"
            className="h-9 w-auto min-w-40"
            value={row.operator}
            disabled={disabled}
            aria-invalid={invalid('operator')}
            onChange={(e) => onChange((r) => withOperator(r, e.target.value as Operator, types, mode))}
          >
            {row.operator === '' ? (
              <option value="" disabled>
                Choose…
              </option>
            ) : null}
            {ops.map((op) => (
              <option key={op} value={op}>
                {operatorLabel(op, dateLike)}
              </option>
            ))}
          </Select>
        ) : null}
        <ValueInput row={row} input={input} suggest={fields.known.has(row.field) && row.field.startsWith('data.')} disabled={disabled} invalid={invalid('value')} unitInvalid={invalid('unit')} onChange={onChange} />
        <Button variant="ghost" size="icon" className="ml-auto" onClick={onRemove} disabled={disabled} aria-label={`Remove ${label.toLowerCase()}`}>
          <Trash2 aria-hidden />
        </Button>
      </div>
      {(['field', 'operator', 'value', 'unit'] as const).map((part) =>
        problem(part) ? (
          <p key={part} role="alert" className="text-xs text-bad">
            {problem(part)}
          </p>
        ) : null,
      )}
    </div>
  );
}

const YMD = /^\d{4}-\d{2}-\d{2}$/;

function ValueInput({
  row,
  input,
  suggest,
  disabled,
  invalid,
  unitInvalid,
  onChange,
}: {
  row: FilterRow;
  input: ReturnType<typeof valueInput>;
  /** Offer the key's most frequent values (GET /contacts/fields/{field}/values) while typing. */
  suggest?: boolean;
  disabled?: boolean;
  invalid?: boolean;
  unitInvalid?: boolean;
  onChange: (fn: (row: FilterRow) => FilterRow) => void;
}) {
  const setValue = (value: string) => onChange((r) => ({ ...r, value }));
  switch (input) {
    case 'none':
      return null;
    case 'boolean':
      return (
        <Select aria-label="Value" className="h-9 w-28" value={row.value === 'false' ? 'false' : 'true'} disabled={disabled} onChange={(e) => setValue(e.target.value)}>
          <option value="true">true</option>
          <option value="false">false</option>
        </Select>
      );
    case 'duration':
      return (
        <div className="flex gap-2">
          <Input
            aria-label="Amount"
            type="number"
            min={1}
            step="any"
            inputMode="decimal"
            className="w-24"
            value={row.value}
            disabled={disabled}
            aria-invalid={invalid}
            onChange={(e) => setValue(e.target.value)}
          />
          <Select aria-label="Unit" className="h-9 w-28" value={row.unit} disabled={disabled} aria-invalid={unitInvalid} onChange={(e) => onChange((r) => ({ ...r, unit: e.target.value as Unit }))}>
            {UNITS.map((u) => (
              <option key={u} value={u}>
                {u}
              </option>
            ))}
          </Select>
          {row.operator === 'olderThan' || row.operator === 'triggeredOlderThan' ? <span className="self-center text-sm text-fg-muted">ago</span> : null}
        </div>
      );
    case 'date':
      // A stored date-time (with its offset) stays editable as text; new values use the date picker.
      return row.value === '' || YMD.test(row.value) ? (
        <Input aria-label="Value" type="date" className="w-44" value={row.value} disabled={disabled} aria-invalid={invalid} onChange={(e) => setValue(e.target.value)} />
      ) : (
        <Input aria-label="Value" className="w-60" value={row.value} disabled={disabled} aria-invalid={invalid} onChange={(e) => setValue(e.target.value)} />
      );
    case 'number':
      return (
        <Input aria-label="Value" type="number" step="any" inputMode="decimal" className="w-32" value={row.value} disabled={disabled} aria-invalid={invalid} onChange={(e) => setValue(e.target.value)} />
      );
    default:
      return suggest ? (
        <SuggestingInput field={row.field} value={row.value} disabled={disabled} invalid={invalid} onChange={setValue} />
      ) : (
        <Input aria-label="Value" className="w-48" value={row.value} disabled={disabled} aria-invalid={invalid} onChange={(e) => setValue(e.target.value)} />
      );
  }
}

/** A text value with the data key's most frequent values as suggestions (fetched on first focus). */
function SuggestingInput({ field, value, disabled, invalid, onChange }: { field: string; value: string; disabled?: boolean; invalid?: boolean; onChange: (v: string) => void }) {
  const project = useProject();
  const listId = useId();
  const [wanted, setWanted] = useState(false);
  const values = useQuery({
    queryKey: ['contacts', 'fields', project.id, field, 'values'],
    queryFn: () => unwrap(api.GET('/contacts/fields/{field}/values', { params: { path: { field }, query: { pageSize: 20 } } })),
    enabled: wanted,
    staleTime: 30_000,
  });
  return (
    <>
      <Input
        aria-label="Value"
        className="w-48"
        list={listId}
        value={value}
        disabled={disabled}
        aria-invalid={invalid}
        onFocus={() => setWanted(true)}
        onChange={(e) => onChange(e.target.value)}
      />
      <datalist id={listId}>
        {values.data?.data.map((v) => (
          <option key={String(v.value)} value={String(v.value)} label={`${formatNumber(v.count)} ${v.count === 1 ? 'contact' : 'contacts'}`} />
        ))}
      </datalist>
    </>
  );
}
