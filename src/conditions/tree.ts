import { z } from 'zod';

/**
 * The condition language (DESIGN §7), shared by segments, FILTERED campaign audiences and
 * workflow CONDITION steps. `compile.ts` turns a validated tree into ONE SQL boolean
 * expression over a contacts row.
 */
export const LOGIC = ['AND', 'OR'] as const;
export const OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'exists',
  'notExists',
  'within',
  'olderThan',
  'triggered',
  'notTriggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggeredWithin',
  'memberOfSegment',
  'notMemberOfSegment',
] as const;
export type Operator = (typeof OPERATORS)[number];
export const UNITS = ['minutes', 'hours', 'days'] as const;
export type Unit = (typeof UNITS)[number];

export interface Filter {
  field: string;
  operator: Operator;
  value?: unknown;
  unit?: Unit;
}

export interface ConditionGroup {
  filters: Filter[];
  conditions?: ConditionTree;
}

export interface ConditionTree {
  logic: 'AND' | 'OR';
  groups: ConditionGroup[];
}

/** Structural schema; field/operator/value compatibility is checked by `validateCondition`. */
export const FilterSchema = z.object({
  field: z.string().min(1).max(300),
  operator: z.enum(OPERATORS),
  value: z.unknown().optional(),
  unit: z.enum(UNITS).optional(),
});

export const ConditionTreeSchema: z.ZodType<ConditionTree> = z.lazy(() =>
  z.object({
    logic: z.enum(LOGIC),
    groups: z.array(
      z.object({
        filters: z.array(FilterSchema).max(100),
        conditions: ConditionTreeSchema.optional(),
      }),
    ).max(50),
  }),
);

/** Email lifecycle milestones usable as `email.<milestone>` fields, and their emails column. */
export const EMAIL_MILESTONES = {
  sent: 'sent_at',
  delivered: 'delivered_at',
  opened: 'opened_at',
  clicked: 'clicked_at',
  bounced: 'bounced_at',
  complained: 'complained_at',
} as const;
export type EmailMilestone = keyof typeof EMAIL_MILESTONES;

const COMPARE = ['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual'] as const;
const ACTIVITY = ['triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'] as const;

/** What a filter's `field` addresses; decides which operators and values are valid. */
export type FieldRef =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'date'; column: 'created_at' | 'updated_at' }
  | { kind: 'data'; key: string }
  | { kind: 'event'; name: string }
  | { kind: 'emailMilestone'; column: (typeof EMAIL_MILESTONES)[EmailMilestone] }
  | { kind: 'segment'; id: string }
  /** A workflow execution's `event.<key>` / `context.<key>` value (only with `execution` parsing). */
  | { kind: 'executionData'; source: 'event' | 'context'; key: string };
export type FieldKind = FieldRef['kind'];

/**
 * Parses a filter field; undefined when it names nothing the language knows. With `execution`
 * (workflow CONDITION steps), `context.<key>` is the execution context's value and `event.<key>`
 * the execution event's value unless `operator` is an activity operator (triggered…), which keeps
 * `event.<name>` the tracked event of that name.
 */
export function parseField(field: string, opts: { execution?: boolean; operator?: string } = {}): FieldRef | undefined {
  if (field === 'email') return { kind: 'email' };
  if (field === 'subscribed') return { kind: 'subscribed' };
  if (field === 'createdAt') return { kind: 'date', column: 'created_at' };
  if (field === 'updatedAt') return { kind: 'date', column: 'updated_at' };
  const dot = field.indexOf('.');
  if (dot <= 0 || dot === field.length - 1) return undefined;
  const head = field.slice(0, dot);
  const rest = field.slice(dot + 1);
  if (head === 'data') return { kind: 'data', key: rest };
  if (opts.execution && head === 'context') return { kind: 'executionData', source: 'context', key: rest };
  if (opts.execution && head === 'event' && !(ACTIVITY as readonly string[]).includes(opts.operator ?? '')) {
    return { kind: 'executionData', source: 'event', key: rest };
  }
  if (head === 'event') return { kind: 'event', name: rest };
  if (head === 'segment') return { kind: 'segment', id: rest };
  if (head === 'email' && Object.hasOwn(EMAIL_MILESTONES, rest)) {
    return { kind: 'emailMilestone', column: EMAIL_MILESTONES[rest as EmailMilestone] };
  }
  return undefined;
}

/** Operators valid for each field kind. */
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

/** Operators that take `value` (a positive number) plus `unit`: a time window back from now. */
export const WINDOWED: readonly Operator[] = ['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan', 'notTriggeredWithin'];
/** Operators that take no value. */
export const VALUELESS: readonly Operator[] = ['exists', 'notExists', 'triggered', 'notTriggered', 'memberOfSegment', 'notMemberOfSegment'];
/** Largest window accepted (in its unit), so the interval arithmetic can never overflow. */
export const MAX_WINDOW = 1_000_000;
/** Deepest nesting of `conditions` in one tree, and longest chain of segment references, accepted. */
export const MAX_DEPTH = 8;
/** Groups of one tree, all nesting levels together. */
export const MAX_GROUPS = 200;
/** Filters of one tree, all nesting levels together. */
export const MAX_FILTERS = 500;
/**
 * Filters of a condition plus those of every segment it references (directly or through other
 * segments), each segment counted once: the size of the SQL it compiles to (docs/conditions.md).
 */
export const MAX_EXPANDED_FILTERS = 1000;
/** `segment.<id>` filters of a condition plus those of every segment it references, each segment counted once. */
export const MAX_EXPANDED_REFERENCES = 100;

/** A plain decimal number written as a string ("42", "-1.5", " 3 "). */
export const NUMERIC_STRING = /^\s*[-+]?(\d+\.?\d*|\.\d+)\s*$/;