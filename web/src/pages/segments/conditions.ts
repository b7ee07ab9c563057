/**
 * Pure logic of the condition builder (DESIGN §7, docs/conditions.md), without DOM or imports so
 * the segment and campaign pages share it and test/web/conditions.test.ts tests it under Node.
 *
 * The builder edits cards: a card is "All of" (AND) or "Any of" (OR) over its items, each item a
 * filter row or a nested card. The API's tree is different — `{logic, groups: [{filters,
 * conditions?}]}`, filters of one group always AND'ed — so `cardToTree` / `treeToCard` translate
 * between the two (an "Any of" card is an OR tree of one-filter groups; an "All of" card is one
 * group whose nested cards become its `conditions`). Filter values are kept as the text the user
 * typed and turned into the API's types (number, boolean, date string) by `cardToTree`.
 *
 * Mode: a segment's (or campaign's) condition is about the contact ('segment', the default of every
 * function). A workflow CONDITION step's ('workflow') also addresses the execution: `context.<key>`,
 * and `event.<key>` the execution's event data, unless its operator is an activity one (triggered…),
 * which keeps `event.<name>` the contact's tracked event (src/conditions/tree.ts parseField).
 */

export type Logic = 'AND' | 'OR';
export type Unit = 'minutes' | 'hours' | 'days';
export type Operator =
  | 'equals'
  | 'notEquals'
  | 'contains'
  | 'notContains'
  | 'greaterThan'
  | 'lessThan'
  | 'greaterThanOrEqual'
  | 'lessThanOrEqual'
  | 'exists'
  | 'notExists'
  | 'within'
  | 'olderThan'
  | 'triggered'
  | 'notTriggered'
  | 'triggeredWithin'
  | 'triggeredOlderThan'
  | 'notTriggeredWithin'
  | 'memberOfSegment'
  | 'notMemberOfSegment';

/** The API's shapes (components['schemas']['ConditionTree'|'ConditionFilter']). */
export interface ApiFilter {
  field: string;
  operator: Operator;
  value?: string | number | boolean;
  unit?: Unit;
}
export interface ApiGroup {
  filters: ApiFilter[];
  conditions?: ApiTree;
}
export interface ApiTree {
  logic: Logic;
  groups: ApiGroup[];
}

/** One row of the builder: `value` is the text of its input ('true'/'false' for booleans). */
export interface FilterRow {
  kind: 'filter';
  id: string;
  field: string;
  operator: Operator | '';
  value: string;
  unit: Unit;
}
export interface Card {
  kind: 'card';
  id: string;
  logic: Logic;
  items: Item[];
}
export type Item = FilterRow | Card;

/** What a field addresses; decides its operators and value input. */
export type FieldKind = 'email' | 'subscribed' | 'date' | 'data' | 'event' | 'emailMilestone' | 'segment' | 'executionData';
/** Whose condition: a segment's (contact fields only) or a workflow step's (also event./context. keys). */
export type ConditionMode = 'segment' | 'workflow';
/** The seen type of a data key (GET /contacts/fields), or unknown for a key typed by hand. */
export type DataType = 'string' | 'number' | 'boolean' | 'date' | 'unknown';

export const UNITS: readonly Unit[] = ['minutes', 'hours', 'days'];
export const EMAIL_MILESTONES = ['sent', 'delivered', 'opened', 'clicked', 'bounced', 'complained'] as const;
export const STANDARD_FIELDS = ['email', 'subscribed', 'createdAt', 'updatedAt'] as const;

/** Server limits (docs/conditions.md "Limits"), checked before a request is made. */
export const MAX_DEPTH = 8;
export const MAX_FILTERS = 500;
export const MAX_GROUPS = 200;
export const MAX_WINDOW = 1_000_000;

const COMPARE: Operator[] = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'];
const ACTIVITY: Operator[] = ['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'];
/** Operators about a tracked event (an `event.<name>` field means the event with these in every mode). */
export const ACTIVITY_OPERATORS: readonly Operator[] = ACTIVITY;
const isActivity = (op: Operator | '' | undefined): boolean => op !== undefined && op !== '' && ACTIVITY.includes(op);
export const WINDOWED: readonly Operator[] = ['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'];
export const VALUELESS: readonly Operator[] = ['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment'];

/** Every operator the server accepts per field kind (src/conditions/tree.ts OPERATORS_BY_KIND). */
export const OPERATORS_BY_KIND: Record<FieldKind, readonly Operator[]> = {
  email: ['equals', 'notEquals', 'contains', 'notContains'],
  subscribed: ['equals', 'notEquals'],
  date: [...COMPARE, 'within', 'olderThan'],
  data: ['equals', 'notEquals', 'contains', 'notContains', ...COMPARE, 'exists', 'notExists', 'within', 'olderThan'],
  event: ACTIVITY,
  emailMilestone: ACTIVITY,
  segment: ['memberOfSegment', 'notMemberOfSegment'],
  executionData: ['equals', 'notEquals', 'contains', 'notContains', ...COMPARE, 'exists', 'notExists'],
};

/** The operators offered for a data key, by its seen type (all the server accepts when unknown). */
export const DATA_OPERATORS: Record<DataType, readonly Operator[]> = {
  string: ['equals', 'notEquals', 'contains', 'notContains', 'exists', 'notExists'],
  number: ['equals', 'notEquals', ...COMPARE, 'exists', 'notExists'],
  boolean: ['equals', 'notEquals', 'exists', 'notExists'],
  date: ['within', 'olderThan', ...COMPARE, 'exists', 'notExists'],
  unknown: OPERATORS_BY_KIND.data,
};

const DATE_LABELS: Partial<Record<Operator, string>> = {
  greaterThan: 'is after',
  lessThan: 'is before',
  greaterThanOrEqual: 'is on or after',
  lessThanOrEqual: 'is on or before',
  within: 'is within the last',
  olderThan: 'is more than',
};

const LABELS: Record<Operator, string> = {
  equals: 'is',
  notEquals: 'is not',
  contains: 'contains',
  notContains: 'does not contain',
  greaterThan: 'is greater than',
  lessThan: 'is less than',
  greaterThanOrEqual: 'is at least',
  lessThanOrEqual: 'is at most',
  exists: 'is set',
  notExists: 'is not set',
  within: 'is within the last',
  olderThan: 'is more than',
  triggered: 'has happened',
  notTriggered: 'has never happened',
  triggeredWithin: 'happened within the last',
  triggeredOlderThan: 'happened more than',
  notTriggeredWithin: 'has not happened within the last',
  memberOfSegment: 'is a member',
  notMemberOfSegment: 'is not a member',
};

/** The words shown for an operator; date comparisons read as before/after. */
export function operatorLabel(op: Operator, dateLike = false): string {
  return (dateLike ? DATE_LABELS[op] : undefined) ?? LABELS[op];
}

/**
 * The kind of a filter field, or undefined when the language does not know it. In a workflow,
 * `context.<key>` is execution data, and so is `event.<key>` unless `operator` is an activity one.
 */
export function fieldKind(field: string, mode: ConditionMode = 'segment', operator?: Operator | ''): FieldKind | undefined {
  if (field === 'email') return 'email';
  if (field === 'subscribed') return 'subscribed';
  if (field === 'createdAt' || field === 'updatedAt') return 'date';
  const dot = field.indexOf('.');
  if (dot <= 0 || dot === field.length - 1) return undefined;
  const head = field.slice(0, dot);
  const rest = field.slice(dot + 1);
  if (head === 'data') return 'data';
  if (mode === 'workflow' && (head === 'context' || (head === 'event' && !isActivity(operator)))) return 'executionData';
  if (head === 'event') return 'event';
  if (head === 'segment') return 'segment';
  if (head === 'email' && (EMAIL_MILESTONES as readonly string[]).includes(rest)) return 'emailMilestone';
  return undefined;
}

/** Seen types of data keys: `data.<key>` → type (from GET /contacts/fields). */
export type DataTypes = ReadonlyMap<string, DataType>;

const dataTypeOf = (field: string, types: DataTypes): DataType => types.get(field) ?? 'unknown';

const keyed = (kind: FieldKind | undefined): boolean => kind === 'data' || kind === 'executionData';

/** True when a field's values are dates (createdAt/updatedAt, or a data key seen as dates). */
export function isDateField(field: string, types: DataTypes, mode: ConditionMode = 'segment', operator?: Operator | ''): boolean {
  const kind = fieldKind(field, mode, operator);
  return kind === 'date' || (keyed(kind) && dataTypeOf(field, types) === 'date');
}

/** The operators offered for a field of this kind (data and execution keys: by their seen type). */
function offeredOperators(kind: FieldKind, field: string, types: DataTypes): Operator[] {
  if (kind === 'data') return [...DATA_OPERATORS[dataTypeOf(field, types)]];
  if (kind === 'executionData') return DATA_OPERATORS[dataTypeOf(field, types)].filter((op) => OPERATORS_BY_KIND.executionData.includes(op));
  return [...OPERATORS_BY_KIND[kind]];
}

/**
 * The operators offered for a field: by its kind, and for data keys by their seen type. The
 * filter's current operator stays in the list when valid for the kind (a stored condition is shown
 * as it is, even when the type list would not offer it).
 */
export function operatorsFor(field: string, types: DataTypes, current?: Operator | '', mode: ConditionMode = 'segment'): Operator[] {
  const kind = fieldKind(field, mode, current);
  if (!kind) return [];
  const offered = offeredOperators(kind, field, types);
  if (current && !offered.includes(current) && OPERATORS_BY_KIND[kind].includes(current)) offered.push(current);
  return offered;
}

/** The input a filter's value needs. */
export type ValueInput = 'none' | 'duration' | 'boolean' | 'date' | 'number' | 'text';

export function valueInput(field: string, operator: Operator | '', types: DataTypes, mode: ConditionMode = 'segment'): ValueInput {
  const kind = fieldKind(field, mode, operator);
  if (!kind || operator === '' || VALUELESS.includes(operator)) return 'none';
  if (WINDOWED.includes(operator)) return 'duration';
  if (kind === 'subscribed') return 'boolean';
  if (kind === 'date') return 'date';
  if (kind === 'email') return 'text';
  if (!keyed(kind)) return 'none';
  const type = dataTypeOf(field, types);
  if (operator === 'contains' || operator === 'notContains') return 'text';
  if (type === 'boolean' && (operator === 'equals' || operator === 'notEquals')) return 'boolean';
  if (type === 'date' && COMPARE.includes(operator)) return 'date';
  if (type === 'number') return 'number';
  return 'text';
}

let counter = 0;
/** A key for React lists (not sent to the API). */
export const newId = (prefix: string): string => `${prefix}${(++counter).toString(36)}`;

export const emptyFilter = (): FilterRow => ({ kind: 'filter', id: newId('f'), field: '', operator: '', value: '', unit: 'days' });
export const emptyCard = (logic: Logic = 'AND', items: Item[] = [emptyFilter()]): Card => ({ kind: 'card', id: newId('c'), logic, items });

/**
 * A filter after its field changed: the first operator offered, a value input's default, the
 * typed value kept when the new field takes the same kind of input.
 */
export function withField(row: FilterRow, field: string, types: DataTypes, mode: ConditionMode = 'segment'): FilterRow {
  // In a workflow the current operator also says whether `event.<x>` is a tracked event or event data.
  const kind = fieldKind(field, mode, row.operator);
  const ops = kind ? offeredOperators(kind, field, types) : [];
  // A workflow key still being typed (`event.`) keeps its operator: it tells tracked event from event data.
  const operator = !kind && mode === 'workflow' ? row.operator : ops.includes(row.operator as Operator) ? row.operator : (ops[0] ?? '');
  const next: FilterRow = { ...row, field, operator };
  return valueInput(field, operator, types, mode) === valueInput(row.field, row.operator, types, mode) ? next : { ...next, value: defaultValue(field, operator, types, mode) };
}

/** A filter after its operator changed (the value kept when the input stays the same kind). */
export function withOperator(row: FilterRow, operator: Operator, types: DataTypes, mode: ConditionMode = 'segment'): FilterRow {
  const same = valueInput(row.field, operator, types, mode) === valueInput(row.field, row.operator, types, mode);
  return { ...row, operator, value: same ? row.value : defaultValue(row.field, operator, types, mode) };
}

function defaultValue(field: string, operator: Operator | '', types: DataTypes, mode: ConditionMode): string {
  const input = valueInput(field, operator, types, mode);
  return input === 'boolean' ? 'true' : input === 'duration' ? '7' : '';
}

// ---------------------------------------------------------------- edits (immutable, by card path)

/** A card's position: indexes of items from the root card down (the root is []). */
export type CardPath = readonly number[];

function mapCard(root: Card, path: CardPath, fn: (card: Card) => Card): Card {
  if (path.length === 0) return fn(root);
  const [head, ...rest] = path;
  return {
    ...root,
    items: root.items.map((item, i) => {
      if (i !== head) return item;
      if (item.kind !== 'card') throw new Error(`no card at ${path.join('.')}`);
      return mapCard(item, rest, fn);
    }),
  };
}

export const setLogic = (root: Card, path: CardPath, logic: Logic): Card => mapCard(root, path, (c) => ({ ...c, logic }));
export const addFilter = (root: Card, path: CardPath, row: FilterRow = emptyFilter()): Card => mapCard(root, path, (c) => ({ ...c, items: [...c.items, row] }));
/** A nested card (the opposite logic of its parent by default: the usual reason to nest). */
export const addCard = (root: Card, path: CardPath, card?: Card): Card =>
  mapCard(root, path, (c) => ({ ...c, items: [...c.items, card ?? emptyCard(c.logic === 'AND' ? 'OR' : 'AND')] }));
export const updateItem = (root: Card, path: CardPath, index: number, fn: (row: FilterRow) => FilterRow): Card =>
  mapCard(root, path, (c) => ({ ...c, items: c.items.map((it, i) => (i === index && it.kind === 'filter' ? fn(it) : it)) }));
export const removeItem = (root: Card, path: CardPath, index: number): Card => mapCard(root, path, (c) => ({ ...c, items: c.items.filter((_, i) => i !== index) }));

// ---------------------------------------------------------------- card ⇄ API tree

const LITERAL_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?$/;

/** The API value of a row (undefined for valueless operators). */
export function rowValue(row: FilterRow, types: DataTypes, mode: ConditionMode = 'segment'): string | number | boolean | undefined {
  const input = valueInput(row.field, row.operator, types, mode);
  const text = row.value.trim();
  switch (input) {
    case 'none':
      return undefined;
    case 'duration':
    case 'number':
      return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
    case 'boolean':
      return text === 'true';
    default:
      // A workflow key of no known type (context.<key>, a key typed by hand): true, false and plain
      // numbers are typed (the step's stored values keep their JSON type), anything else is text.
      if (mode === 'workflow' && dataTypeOf(row.field, types) === 'unknown' && keyed(fieldKind(row.field, mode, row.operator))) {
        if (text === 'true' || text === 'false') return text === 'true';
        if (LITERAL_NUMBER.test(text)) return Number(text);
      }
      return row.value;
  }
}

function toApiFilter(row: FilterRow, types: DataTypes, mode: ConditionMode): ApiFilter {
  const filter: ApiFilter = { field: row.field, operator: row.operator as Operator };
  const value = rowValue(row, types, mode);
  if (value !== undefined) filter.value = value;
  if (row.operator !== '' && WINDOWED.includes(row.operator)) filter.unit = row.unit;
  return filter;
}

/** API path (e.g. `groups.0.filters.1`) of each filter row, by row id: to place 422 errors. */
export type PathIndex = Map<string, string>;

const join = (base: string, rest: string) => (base ? `${base}.${rest}` : rest);

function cardAsTree(card: Card, types: DataTypes, at: string, index: PathIndex, mode: ConditionMode): ApiTree {
  if (card.logic === 'AND') return { logic: 'AND', groups: [cardAsGroup(card, types, join(at, 'groups.0'), index, mode)] };
  return {
    logic: 'OR',
    groups: card.items.map((item, i) => {
      const g = join(at, `groups.${i}`);
      if (item.kind === 'filter') {
        index.set(item.id, `${g}.filters.0`);
        return { filters: [toApiFilter(item, types, mode)] };
      }
      return cardAsGroup(item, types, g, index, mode);
    }),
  };
}

function cardAsGroup(card: Card, types: DataTypes, at: string, index: PathIndex, mode: ConditionMode): ApiGroup {
  if (card.logic === 'OR') return { filters: [], conditions: cardAsTree(card, types, `${at}.conditions`, index, mode) };
  const filters: ApiFilter[] = [];
  const cards: Card[] = [];
  for (const item of card.items) {
    if (item.kind === 'filter') {
      index.set(item.id, `${at}.filters.${filters.length}`);
      filters.push(toApiFilter(item, types, mode));
    } else cards.push(item);
  }
  const group: ApiGroup = { filters };
  if (cards.length === 1 && cards[0]) {
    group.conditions = cardAsTree(cards[0], types, `${at}.conditions`, index, mode);
  } else if (cards.length > 1) {
    group.conditions = { logic: 'AND', groups: cards.map((c, i) => cardAsGroup(c, types, `${at}.conditions.groups.${i}`, index, mode)) };
  }
  return group;
}

/**
 * The API tree of a card, and where each row lands in it. An empty root card is `{logic: 'AND',
 * groups: []}` ("all contacts", docs/conditions.md).
 */
export function cardToTree(card: Card, types: DataTypes, mode: ConditionMode = 'segment'): { tree: ApiTree; paths: PathIndex } {
  const paths: PathIndex = new Map();
  if (card.items.length === 0) return { tree: { logic: 'AND', groups: [] }, paths };
  return { tree: cardAsTree(card, types, '', paths, mode), paths };
}

function filterRow(f: ApiFilter): FilterRow {
  return {
    kind: 'filter',
    id: newId('f'),
    field: f.field,
    operator: f.operator,
    value: f.value === undefined ? '' : String(f.value),
    unit: f.unit ?? 'days',
  };
}

function groupItems(group: ApiGroup): Item[] {
  const items: Item[] = group.filters.map(filterRow);
  if (group.conditions) {
    const nested = treeToCard(group.conditions);
    if (nested.logic === 'AND') items.push(...nested.items);
    else items.push(nested);
  }
  return items;
}

/**
 * The card of an API tree (a stored segment's condition, whoever wrote it). AND levels are
 * flattened into one "All of" card; an OR tree becomes an "Any of" card whose one-filter groups
 * are rows and whose other groups are nested "All of" cards.
 */
export function treeToCard(tree: ApiTree): Card {
  if (tree.logic === 'AND') return { kind: 'card', id: newId('c'), logic: 'AND', items: tree.groups.flatMap(groupItems) };
  return {
    kind: 'card',
    id: newId('c'),
    logic: 'OR',
    items: tree.groups.map((g): Item => {
      const only = g.filters[0];
      if (g.filters.length === 1 && only && !g.conditions) return filterRow(only);
      const items = groupItems(g);
      const single = items[0];
      if (items.length === 1 && single?.kind === 'card') return single;
      return { kind: 'card', id: newId('c'), logic: 'AND', items };
    }),
  };
}

// ---------------------------------------------------------------- validation

/** A problem of one row (by row id) or of a card (by card id), in the builder's words. */
export interface Problem {
  id: string;
  part: 'field' | 'operator' | 'value' | 'unit' | 'card';
  message: string;
}

const YMD = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)$/;
const NUMERIC = /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A date the server accepts in a condition (docs/conditions.md "Dates"), checked for real days. */
export function isConditionDate(text: string): boolean {
  if (!YMD.test(text) && !DATE_TIME.test(text)) return false;
  const [y, m, d] = text.slice(0, 10).split('-').map(Number) as [number, number, number];
  if (y < 1000) return false;
  const day = new Date(Date.UTC(y, m - 1, d));
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== m - 1 || day.getUTCDate() !== d) return false;
  if (text.length === 10) return true;
  const [hh, mm, ss] = [Number(text.slice(11, 13)), Number(text.slice(14, 16)), text[16] === ':' ? Number(text.slice(17, 19)) : 0];
  return hh < 24 && mm < 60 && ss < 60;
}

function rowProblem(row: FilterRow, types: DataTypes, mode: ConditionMode): Problem | undefined {
  const p = (part: Problem['part'], message: string): Problem => ({ id: row.id, part, message });
  if (row.field === '') return p('field', 'Choose a field');
  if (row.field === 'data.') return p('field', 'Enter the data key');
  if (row.field === 'event.') return p('field', mode === 'workflow' && !isActivity(row.operator) ? 'Enter the event key' : 'Enter the event name');
  if (row.field === 'context.' && mode === 'workflow') return p('field', 'Enter the context key');
  const kind = fieldKind(row.field, mode, row.operator);
  if (!kind) return p('field', `Unknown field "${row.field}"`);
  if (row.operator === '' || !OPERATORS_BY_KIND[kind].includes(row.operator)) return p('operator', 'Choose an operator');
  const text = row.value.trim();
  switch (valueInput(row.field, row.operator, types, mode)) {
    case 'duration': {
      const n = Number(text);
      return text === '' || !Number.isFinite(n) || n <= 0 || n > MAX_WINDOW ? p('value', `Enter a number greater than 0 (at most ${MAX_WINDOW.toLocaleString('en-US')})`) : undefined;
    }
    case 'number':
      return NUMERIC.test(text) ? undefined : p('value', 'Enter a number');
    case 'date':
      return isConditionDate(text) ? undefined : p('value', 'Enter a date (YYYY-MM-DD)');
    case 'text':
      if (kind === 'email' && row.value.length > 1000) return p('value', 'At most 1000 characters');
      if (keyed(kind) && COMPARE.includes(row.operator) && !NUMERIC.test(text) && !isConditionDate(text)) return p('value', 'Enter a number or a date');
      return undefined;
    default:
      return undefined;
  }
}

function depthOf(tree: ApiTree): number {
  return 1 + Math.max(0, ...tree.groups.map((g) => (g.conditions ? depthOf(g.conditions) : 0)));
}

function countParts(tree: ApiTree): { groups: number; filters: number } {
  let groups = 0;
  let filters = 0;
  for (const g of tree.groups) {
    groups++;
    filters += g.filters.length;
    if (g.conditions) {
      const inner = countParts(g.conditions);
      groups += inner.groups;
      filters += inner.filters;
    }
  }
  return { groups, filters };
}

/**
 * What keeps a card from being saved: rows without field/operator/valid value, nested cards with
 * nothing in them, and the server's size limits (the tree the card becomes, MAX_DEPTH levels of
 * `conditions`, MAX_GROUPS groups, MAX_FILTERS filters). The root may be empty (all contacts).
 */
export function validateCard(root: Card, types: DataTypes, mode: ConditionMode = 'segment'): Problem[] {
  const problems: Problem[] = [];
  const walk = (card: Card, nested: boolean) => {
    if (nested && card.items.length === 0) problems.push({ id: card.id, part: 'card', message: 'Add a condition to this group or remove it' });
    for (const item of card.items) {
      if (item.kind === 'card') walk(item, true);
      else {
        const problem = rowProblem(item, types, mode);
        if (problem) problems.push(problem);
      }
    }
  };
  walk(root, false);
  const { tree } = cardToTree(root, types, mode);
  // depthOf counts the root tree as 1; the server counts nesting of `conditions` below it.
  if (depthOf(tree) - 1 > MAX_DEPTH) problems.push({ id: root.id, part: 'card', message: `Groups nest at most ${MAX_DEPTH} levels deep` });
  const size = countParts(tree);
  if (size.groups > MAX_GROUPS) problems.push({ id: root.id, part: 'card', message: `At most ${MAX_GROUPS} groups` });
  if (size.filters > MAX_FILTERS) problems.push({ id: root.id, part: 'card', message: `At most ${MAX_FILTERS} conditions` });
  return problems;
}

/**
 * The API's 422 `errors[]` placed on the builder: an error on `<prefix>.groups.0.filters.1.value`
 * becomes a problem of the row that landed there. Errors naming no row (the whole condition) go
 * to the root card.
 */
export function placeApiErrors(errors: readonly { field: string; message: string }[], prefix: string, paths: PathIndex, rootId: string): Problem[] {
  const byPath = new Map<string, string>();
  for (const [id, path] of paths) byPath.set(path, id);
  const out: Problem[] = [];
  for (const e of errors) {
    if (e.field !== prefix && !e.field.startsWith(`${prefix}.`)) continue;
    const rest = e.field === prefix ? '' : e.field.slice(prefix.length + 1);
    const m = /^(.*\.filters\.\d+|filters\.\d+)\.(field|operator|value|unit)$/.exec(rest);
    const id = m?.[1] ? byPath.get(m[1]) : undefined;
    if (m && id) out.push({ id, part: m[2] as Problem['part'], message: e.message });
    else out.push({ id: rootId, part: 'card', message: e.message });
  }
  return out;
}

/** Rows and cards of a card, counted (for the builder's summary). */
export function countRows(card: Card): number {
  return card.items.reduce((n, it) => n + (it.kind === 'filter' ? 1 : countRows(it)), 0);
}

// ---------------------------------------------------------------- static segment members

/** Emails per add/remove request (the server's MAX_MEMBER_EMAILS). */
export const MAX_MEMBER_EMAILS = 1000;
const EMAIL = /^[^\s@,;<>]+@[^\s@,;<>]+\.[^\s@,;<>]+$/;

/**
 * The emails of a pasted list (commas, semicolons, spaces or lines between them; `Name <a@b.c>`
 * forms read as the address), trimmed, lower-cased like the server stores them, de-duplicated,
 * and the entries that are not addresses.
 */
export function parseEmailList(text: string): { emails: string[]; invalid: string[] } {
  const emails = new Set<string>();
  const invalid: string[] = [];
  for (const raw of text.split(/[\s,;]+/)) {
    const part = raw.replace(/^<|>$/g, '').trim();
    if (part === '') continue;
    if (EMAIL.test(part) && part.length <= 254) emails.add(part.toLowerCase());
    else if (part.includes('@') || !/^[\p{L}"'()]+$/u.test(part)) invalid.push(part);
  }
  return { emails: [...emails], invalid };
}

/** "1 contact", "1,204 contacts" (thousands separators of the user's locale). */
export const countOf = (n: number, one: string, many: string): string => `${n.toLocaleString()} ${n === 1 ? one : many}`;
