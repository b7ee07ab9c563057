import { describe, expect, it } from 'vitest';
import {
  addCard,
  addFilter,
  type ApiTree,
  type Card,
  cardToTree,
  type DataType,
  emptyCard,
  fieldKind,
  type FilterRow,
  isConditionDate,
  type Item,
  OPERATORS_BY_KIND,
  operatorsFor,
  parseEmailList,
  placeApiErrors,
  removeItem,
  setLogic,
  treeToCard,
  updateItem,
  validateCard,
  valueInput,
  withField,
  withOperator,
} from '../../web/src/pages/segments/conditions.js';

const types = new Map<string, DataType>([
  ['data.plan', 'string'],
  ['data.age', 'number'],
  ['data.vip', 'boolean'],
  ['data.renewsAt', 'date'],
]);

let n = 0;
const row = (field: string, operator: FilterRow['operator'], value = '', unit: FilterRow['unit'] = 'days'): FilterRow => ({ kind: 'filter', id: `r${++n}`, field, operator, value, unit });
const card = (logic: 'AND' | 'OR', items: Item[]): Card => ({ kind: 'card', id: `c${++n}`, logic, items });

/** A card without ids, to compare structures. */
const shape = (c: Card): unknown => ({
  logic: c.logic,
  items: c.items.map((it) => (it.kind === 'card' ? shape(it) : { field: it.field, operator: it.operator, value: it.value, unit: it.unit })),
});

describe('condition builder: operators and inputs per field type', () => {
  it('offers operators by field kind and by the seen type of a data key', () => {
    expect(operatorsFor('email', types)).toEqual(['equals', 'notEquals', 'contains', 'notContains']);
    expect(operatorsFor('subscribed', types)).toEqual(['equals', 'notEquals']);
    expect(operatorsFor('createdAt', types)).toEqual(['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'within', 'olderThan']);
    expect(operatorsFor('data.plan', types)).toEqual(['equals', 'notEquals', 'contains', 'notContains', 'exists', 'notExists']);
    expect(operatorsFor('data.age', types)).toContain('greaterThan');
    expect(operatorsFor('data.age', types)).not.toContain('contains');
    expect(operatorsFor('data.vip', types)).toEqual(['equals', 'notEquals', 'exists', 'notExists']);
    expect(operatorsFor('data.renewsAt', types)).toContain('within');
    // A key typed by hand (no contact has it yet): everything the server accepts on data.
    expect(operatorsFor('data.new', types)).toEqual(OPERATORS_BY_KIND.data);
    expect(operatorsFor('event.signup', types)).toEqual(['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin']);
    expect(operatorsFor('email.opened', types)).toEqual(operatorsFor('event.x', types));
    expect(operatorsFor('segment.3f0c…', types)).toEqual(['memberOfSegment', 'notMemberOfSegment']);
    expect(operatorsFor('email.forwarded', types)).toEqual([]);
    expect(operatorsFor('', types)).toEqual([]);
  });

  it('keeps a stored operator the type list would not offer, when the server accepts it', () => {
    expect(operatorsFor('data.age', types, 'contains')).toContain('contains');
    expect(operatorsFor('data.age', types, 'triggered')).not.toContain('triggered');
  });

  it('picks the value input from the operator', () => {
    expect(valueInput('data.plan', 'equals', types)).toBe('text');
    expect(valueInput('data.plan', 'exists', types)).toBe('none');
    expect(valueInput('data.age', 'greaterThan', types)).toBe('number');
    expect(valueInput('data.vip', 'equals', types)).toBe('boolean');
    expect(valueInput('data.renewsAt', 'lessThan', types)).toBe('date');
    expect(valueInput('data.renewsAt', 'within', types)).toBe('duration');
    expect(valueInput('createdAt', 'greaterThan', types)).toBe('date');
    expect(valueInput('subscribed', 'equals', types)).toBe('boolean');
    expect(valueInput('event.signup', 'triggeredWithin', types)).toBe('duration');
    expect(valueInput('event.signup', 'triggered', types)).toBe('none');
    expect(valueInput('segment.x', 'memberOfSegment', types)).toBe('none');
  });

  it('resets the operator and value when the field changes kind, keeps them otherwise', () => {
    const r = row('data.plan', 'contains', 'pr');
    expect(withField(r, 'email', types)).toMatchObject({ field: 'email', operator: 'contains', value: 'pr' });
    expect(withField(r, 'subscribed', types)).toMatchObject({ operator: 'equals', value: 'true' });
    expect(withField(r, 'event.signup', types)).toMatchObject({ operator: 'triggered', value: '' });
    expect(withOperator(withField(r, 'event.signup', types), 'triggeredWithin', types)).toMatchObject({ value: '7' });
    expect(withOperator(r, 'notContains', types)).toMatchObject({ value: 'pr' });
  });
});

describe('condition builder: cards to the API tree and back', () => {
  it('turns "All of" with a nested "Any of" into one group with an OR tree', () => {
    const root = card('AND', [row('data.plan', 'equals', 'pro'), card('OR', [row('data.age', 'greaterThan', '40'), row('event.purchase', 'triggeredWithin', '30', 'days')])]);
    const { tree, paths } = cardToTree(root, types);
    expect(tree).toEqual({
      logic: 'AND',
      groups: [
        {
          filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
          conditions: {
            logic: 'OR',
            groups: [
              { filters: [{ field: 'data.age', operator: 'greaterThan', value: 40 }] },
              { filters: [{ field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' }] },
            ],
          },
        },
      ],
    });
    const ids = root.items.flatMap((it) => (it.kind === 'filter' ? [it.id] : it.items.map((x) => x.id)));
    expect(ids.map((id) => paths.get(id))).toEqual(['groups.0.filters.0', 'groups.0.conditions.groups.0.filters.0', 'groups.0.conditions.groups.1.filters.0']);
  });

  it('types values: numbers, booleans, dates as written, no value for valueless operators', () => {
    const root = card('AND', [row('data.vip', 'equals', 'false'), row('subscribed', 'equals', 'true'), row('createdAt', 'greaterThan', '2026-01-31'), row('data.plan', 'exists', 'left over')]);
    expect(cardToTree(root, types).tree.groups[0]?.filters).toEqual([
      { field: 'data.vip', operator: 'equals', value: false },
      { field: 'subscribed', operator: 'equals', value: true },
      { field: 'createdAt', operator: 'greaterThan', value: '2026-01-31' },
      { field: 'data.plan', operator: 'exists' },
    ]);
  });

  it('an empty root is "all contacts"; several nested cards under "All of" are an AND tree of groups', () => {
    expect(cardToTree(card('AND', []), types).tree).toEqual({ logic: 'AND', groups: [] });
    const root = card('AND', [card('OR', [row('data.plan', 'equals', 'a'), row('data.plan', 'equals', 'b')]), card('OR', [row('data.age', 'lessThan', '3'), row('data.vip', 'equals', 'true')])]);
    const { tree } = cardToTree(root, types);
    expect(tree.groups[0]?.conditions?.logic).toBe('AND');
    expect(tree.groups[0]?.conditions?.groups.map((g) => g.conditions?.logic)).toEqual(['OR', 'OR']);
  });

  it('round-trips cards through the API tree', () => {
    const cards = [
      card('AND', [row('data.plan', 'equals', 'pro')]),
      card('OR', [row('email', 'contains', '@acme'), card('AND', [row('data.age', 'greaterThan', '3'), row('data.vip', 'equals', 'true')])]),
      card('AND', [row('data.plan', 'equals', 'pro'), card('OR', [row('event.a', 'triggered'), card('AND', [row('email.opened', 'triggeredWithin', '2', 'hours'), card('OR', [row('segment.x', 'memberOfSegment')])])])]),
      card('OR', [card('OR', [row('data.plan', 'equals', 'a')])]),
    ];
    for (const c of cards) {
      const back = treeToCard(cardToTree(c, types).tree);
      expect(shape(back)).toEqual(shape(c));
      expect(cardToTree(back, types).tree).toEqual(cardToTree(c, types).tree);
    }
  });

  it('reads trees written through the API (several groups, filters beside a nested tree) without changing their meaning', () => {
    const tree: ApiTree = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'data.age', operator: 'greaterThan', value: 3 }] },
        { filters: [{ field: 'event.x', operator: 'triggered' }] },
        { filters: [{ field: 'data.vip', operator: 'equals', value: true }], conditions: { logic: 'OR', groups: [{ filters: [{ field: 'email', operator: 'contains', value: 'a' }] }, { filters: [] }] } },
      ],
    };
    const c = treeToCard(tree);
    expect(shape(c)).toEqual({
      logic: 'OR',
      items: [
        { logic: 'AND', items: [{ field: 'data.plan', operator: 'equals', value: 'pro', unit: 'days' }, { field: 'data.age', operator: 'greaterThan', value: '3', unit: 'days' }] },
        { field: 'event.x', operator: 'triggered', value: '', unit: 'days' },
        {
          logic: 'AND',
          items: [
            { field: 'data.vip', operator: 'equals', value: 'true', unit: 'days' },
            { logic: 'OR', items: [{ field: 'email', operator: 'contains', value: 'a', unit: 'days' }, { logic: 'AND', items: [] }] },
          ],
        },
      ],
    });
    // The AND tree of several groups flattens into one "All of" card (an AND of ANDs).
    const and = treeToCard({ logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'equals', value: 'a@b.c' }] }, { filters: [{ field: 'subscribed', operator: 'equals', value: true }] }] });
    expect(shape(and)).toEqual({ logic: 'AND', items: [{ field: 'email', operator: 'equals', value: 'a@b.c', unit: 'days' }, { field: 'subscribed', operator: 'equals', value: 'true', unit: 'days' }] });
  });
});

describe('condition builder: edits and validation', () => {
  it('edits by card path without touching other cards', () => {
    let root = emptyCard('AND', []);
    root = addFilter(root, []);
    root = addCard(root, []);
    expect(root.items[1]).toMatchObject({ kind: 'card', logic: 'OR' });
    root = addFilter(root, [1]);
    expect((root.items[1] as Card).items).toHaveLength(2);
    root = updateItem(root, [1], 0, (r) => withField(r, 'data.age', types));
    expect((root.items[1] as Card).items[0]).toMatchObject({ field: 'data.age', operator: 'equals' });
    expect(root.items[0]).toMatchObject({ field: '' });
    root = setLogic(root, [1], 'AND');
    expect((root.items[1] as Card).logic).toBe('AND');
    root = removeItem(root, [1], 1);
    expect((root.items[1] as Card).items).toHaveLength(1);
    root = removeItem(root, [], 1);
    expect(root.items).toHaveLength(1);
    expect(() => addFilter(root, [0])).toThrow();
  });

  it('names the rows that cannot be saved, and empty nested groups', () => {
    const bad = [
      row('', ''),
      row('data.plan', ''),
      row('data.age', 'greaterThan', 'abc'),
      row('createdAt', 'lessThan', '2024-02-30'),
      row('event.a', 'triggeredWithin', '0'),
      row('data.unknownKey', 'greaterThan', 'soon'),
      row('email.forwarded', 'triggered'),
    ];
    const empty = card('OR', []);
    const problems = validateCard(card('AND', [...bad, empty]), types);
    expect(problems.map((p) => [p.id, p.part])).toEqual([
      [bad[0]?.id, 'field'],
      [bad[1]?.id, 'operator'],
      [bad[2]?.id, 'value'],
      [bad[3]?.id, 'value'],
      [bad[4]?.id, 'value'],
      [bad[5]?.id, 'value'],
      [bad[6]?.id, 'field'],
      [empty.id, 'card'],
    ]);
    const good = card('AND', [
      row('data.age', 'greaterThan', '40'),
      row('data.unknownKey', 'lessThan', '2026-01-01T10:00+01:00'),
      row('createdAt', 'greaterThan', '2024-02-29'),
      row('event.a', 'notTriggeredWithin', '3', 'hours'),
      row('data.plan', 'equals', ''),
    ]);
    expect(validateCard(good, types)).toEqual([]);
    expect(validateCard(card('AND', []), types)).toEqual([]);
  });

  it('refuses nesting past the server limit of 8 levels', () => {
    let deepest: Card = card('AND', [row('data.plan', 'equals', 'x')]);
    const build = (levels: number) => {
      deepest = card('AND', [row('data.plan', 'equals', 'x')]);
      let c: Card = deepest;
      for (let i = 0; i < levels; i++) c = card(i % 2 ? 'AND' : 'OR', [row('data.plan', 'equals', 'y'), c]);
      return c;
    };
    const depth = (t: ApiTree): number => 1 + Math.max(0, ...t.groups.map((g) => (g.conditions ? depth(g.conditions) : 0)));
    for (let levels = 1; levels < 12; levels++) {
      const root = build(levels);
      const nested = depth(cardToTree(root, types).tree) - 1;
      expect(validateCard(root, types).some((p) => p.part === 'card')).toBe(nested > 8);
    }
  });

  it('checks dates like the server does', () => {
    for (const ok of ['2026-12-01', '2024-02-29', '2026-12-01T09:00:00Z', '2026-12-01T10:00+01:00', '2026-12-01T10:00:00.123456789-0530', '2026-12-01T10:00+01']) expect(isConditionDate(ok), ok).toBe(true);
    for (const bad of ['2023-02-29', '0999-01-01', '2026-12-01T24:00Z', '2026-12-01T10:00:60Z', '2026-12-01T10:00', '2026-12-01 (x)', '12/01/2026', '']) expect(isConditionDate(bad), bad).toBe(false);
  });

  it('places the API 422 errors on the rows they name', () => {
    const a = row('data.plan', 'equals', 'pro');
    const b = row('segment.nope', 'memberOfSegment');
    const root = card('AND', [a, card('OR', [row('data.age', 'greaterThan', '3'), b])]);
    const { paths } = cardToTree(root, types);
    const placed = placeApiErrors(
      [
        { field: 'condition.groups.0.conditions.groups.1.filters.0.field', message: 'not a segment id' },
        { field: 'condition.groups.0.filters.0.value', message: 'bad value' },
        { field: 'condition', message: 'too big' },
        { field: 'name', message: 'Required' },
      ],
      'condition',
      paths,
      root.id,
    );
    expect(placed).toEqual([
      { id: b.id, part: 'field', message: 'not a segment id' },
      { id: a.id, part: 'value', message: 'bad value' },
      { id: root.id, part: 'card', message: 'too big' },
    ]);
  });
});

describe('static segment members: pasted email lists', () => {
  it('reads addresses between commas, semicolons, spaces and lines, lower-cased and de-duplicated', () => {
    expect(parseEmailList('Ann@Example.com, bob@example.com;\ncid@example.com  ann@example.com\n\n')).toEqual({
      emails: ['ann@example.com', 'bob@example.com', 'cid@example.com'],
      invalid: [],
    });
  });

  it('takes the address of "Name <a@b.c>" and names what is not an address', () => {
    expect(parseEmailList('Ann Smith <ann@example.com>, not-an-email, x@y, 42')).toEqual({ emails: ['ann@example.com'], invalid: ['not-an-email', 'x@y', '42'] });
    expect(parseEmailList('   ')).toEqual({ emails: [], invalid: [] });
  });
});

describe('condition builder: workflow mode (event./context. execution fields)', () => {
  const wtypes = new Map<string, DataType>([...types, ['event.total', 'number']]);
  it('event.<key> is event data unless its operator is an activity one; context.<key> only in workflows', () => {
    expect(fieldKind('event.plan', 'workflow')).toBe('executionData');
    expect(fieldKind('event.plan', 'workflow', 'equals')).toBe('executionData');
    expect(fieldKind('event.signup', 'workflow', 'triggered')).toBe('event');
    expect(fieldKind('context.score', 'workflow')).toBe('executionData');
    // Segments: unchanged.
    expect(fieldKind('event.signup')).toBe('event');
    expect(fieldKind('event.signup', 'segment', 'equals')).toBe('event');
    expect(fieldKind('context.score')).toBeUndefined();
  });

  it('offers the execution operators by seen type, and the activity ones for a tracked event', () => {
    expect(operatorsFor('event.total', wtypes, 'equals', 'workflow')).toEqual(['equals', 'notEquals', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists']);
    expect(operatorsFor('context.x', wtypes, '', 'workflow')).toEqual([...OPERATORS_BY_KIND.executionData]);
    expect(operatorsFor('event.signup', wtypes, 'triggered', 'workflow')).toEqual([...OPERATORS_BY_KIND.event]);
    expect(operatorsFor('event.signup', wtypes)).toEqual([...OPERATORS_BY_KIND.event]);
    expect(valueInput('event.total', 'greaterThan', wtypes, 'workflow')).toBe('number');
    expect(valueInput('context.x', 'exists', wtypes, 'workflow')).toBe('none');
  });

  it('a workflow key being typed keeps its operator (which tells tracked event from event data)', () => {
    expect(withField(row('email', 'triggered'), 'event.', wtypes, 'workflow').operator).toBe('triggered');
    expect(withField(row('event.', 'triggered'), 'event.signup', wtypes, 'workflow').operator).toBe('triggered');
    expect(withField(row('event.', ''), 'event.total', wtypes, 'workflow').operator).toBe('equals');
    // Segments: an incomplete key has no operator, as before.
    expect(withField(row('email', 'contains'), 'data.', types).operator).toBe('');
  });

  it('validates and converts execution rows; segments refuse them', () => {
    const c = card('AND', [row('event.total', 'greaterThan', '10'), row('context.flag', 'equals', 'true'), row('event.', '')]);
    expect(validateCard(c, wtypes, 'workflow').map((p) => p.message)).toEqual(['Enter the event key']);
    const ok = card('AND', [row('event.total', 'greaterThan', '10'), row('context.flag', 'equals', 'true'), row('event.signup', 'triggeredWithin', '3')]);
    expect(validateCard(ok, wtypes, 'workflow')).toEqual([]);
    expect(cardToTree(ok, wtypes, 'workflow').tree).toEqual({
      logic: 'AND',
      groups: [
        {
          filters: [
            { field: 'event.total', operator: 'greaterThan', value: 10 },
            { field: 'context.flag', operator: 'equals', value: true },
            { field: 'event.signup', operator: 'triggeredWithin', value: 3, unit: 'days' },
          ],
        },
      ],
    });
    expect(validateCard(card('AND', [row('context.flag', 'equals', 'true')]), types).map((p) => p.part)).toEqual(['field']);
    // A segment's data key typed by hand keeps its text as text.
    expect(cardToTree(card('AND', [row('data.code', 'equals', '42')]), types).tree.groups[0]?.filters[0]?.value).toBe('42');
  });
});
