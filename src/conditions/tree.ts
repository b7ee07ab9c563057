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
