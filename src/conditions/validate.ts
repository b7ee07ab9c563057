import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type FieldError, validationError } from '../lib/errors.js';
import { DATE_FORMS_HINT, isDate } from '../lib/dates.js';
import { boundsProblem } from './bounds.js';
import { resolveReferences } from './graph.js';
import {
  type ConditionTree,
  ConditionTreeSchema,
  type FieldRef,
  type Filter,
  MAX_WINDOW,
  NUMERIC_STRING,
  OPERATORS_BY_KIND,
  parseField,
  VALUELESS,
  WINDOWED,
} from './tree.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ValidateOptions {
  /** The segment whose condition this is: referencing it (directly or through others) is a cycle. */
  selfId?: string;
  /**
   * Workflow CONDITION steps: also accept `event.<key>` (with a comparison operator) and
   * `context.<key>`, the execution's event data and context (default false: segments, campaigns).
   */
  executionFields?: boolean;
}

/** A tree that passed every check needing no database, with what the reference checks need. */
export interface CheckedTree {
  tree: ConditionTree;
  /** Filters over all nesting levels. */
  filters: number;
  /** `segment.<id>` filters. */
  references: number;
  /** Referenced segment id (lower-cased) → field path of its first reference. */
  segments: Map<string, string>;
}

const join = (prefix: string, path: readonly PropertyKey[]) =>
  [prefix, ...path.map(String)].filter((p) => p !== '').join('.');

const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Why `value` does not fit the filter, or undefined when it does. */
function valueProblem(ref: FieldRef, f: Filter): string | undefined {
  const v = f.value;
  if (VALUELESS.includes(f.operator)) return undefined;
  if (WINDOWED.includes(f.operator)) {
    if (!isFiniteNumber(v) || v <= 0 || v > MAX_WINDOW) return `must be a number greater than 0 and at most ${MAX_WINDOW}`;
    return undefined;
  }
  switch (ref.kind) {
    case 'email':
      return typeof v === 'string' && v.length <= 1000 ? undefined : 'must be a string';
    case 'subscribed':
      return typeof v === 'boolean' ? undefined : 'must be a boolean';
    case 'date':
      return isDate(v) ? undefined : `must be ${DATE_FORMS_HINT}`;
    case 'data':
    case 'executionData':
      if (f.operator === 'equals' || f.operator === 'notEquals') {
        return typeof v === 'string' || typeof v === 'boolean' || isFiniteNumber(v) ? undefined : 'must be a string, number or boolean';
      }
      if (f.operator === 'contains' || f.operator === 'notContains') {
        return typeof v === 'string' || isFiniteNumber(v) ? undefined : 'must be a string or number';
      }
      // greaterThan … lessThanOrEqual: numbers (or numeric strings) compare numerically, dates as dates.
      return isFiniteNumber(v) || (typeof v === 'string' && NUMERIC_STRING.test(v)) || isDate(v)
        ? undefined
        : `must be a number, a numeric string or ${DATE_FORMS_HINT}`;
    default:
      return undefined;
  }
}

function checkFilter(f: Filter, at: string, errors: FieldError[], out: CheckedTree, execution: boolean): void {
  const ref = parseField(f.field, { execution, operator: f.operator });
  if (!ref) {
    errors.push({ field: `${at}.field`, message: `Unknown field "${f.field}"`, code: 'unknown_field', received: f.field });
    return;
  }
  if (!OPERATORS_BY_KIND[ref.kind].includes(f.operator)) {
    errors.push({
      field: `${at}.operator`,
      message: `Operator "${f.operator}" is not valid for field "${f.field}" (allowed: ${OPERATORS_BY_KIND[ref.kind].join(', ')})`,
      code: 'invalid_operator',
      received: f.operator,
    });
    return;
  }
  if (WINDOWED.includes(f.operator) && f.unit === undefined) {
    errors.push({ field: `${at}.unit`, message: 'Required for this operator (minutes, hours or days)', code: 'required' });
  }
  const problem = valueProblem(ref, f);
  if (problem) errors.push({ field: `${at}.value`, message: `Value ${problem}`, code: 'invalid_value', received: f.value });
  if (ref.kind === 'segment') {
    out.references++;
    if (!UUID.test(ref.id)) {
      errors.push({ field: `${at}.field`, message: `"${ref.id}" is not a segment id`, code: 'unknown_segment', received: f.field });
    } else if (!out.segments.has(ref.id.toLowerCase())) {
      out.segments.set(ref.id.toLowerCase(), `${at}.field`);
    }
  }
}

/**
 * Every check of one tree that needs no database: size bounds first (iterative, so no input can
 * overflow the stack), then the schema, then fields, operators per field kind, units and value
 * types. Used on request input and on stored trees alike (a stored tree that no longer passes is
 * refused with 422 when used, never sent to the database). Depth is bounded before the walk below
 * recurses, so its recursion is at most MAX_DEPTH deep.
 */
export function checkTree(
  raw: unknown,
  prefix: string,
  opts: { executionFields?: boolean } = {},
): { ok: CheckedTree; errors?: undefined } | { errors: FieldError[] } {
  const tooBig = boundsProblem(raw, prefix);
  if (tooBig) return { errors: [tooBig] };
  const parsed = ConditionTreeSchema.safeParse(raw);
  if (!parsed.success) {
    return { errors: parsed.error.issues.map((i) => ({ field: join(prefix, i.path), message: i.message, code: i.code })) };
  }
  const out: CheckedTree = { tree: parsed.data, filters: 0, references: 0, segments: new Map() };
  const errors: FieldError[] = [];
  const walk = (tree: ConditionTree, path: string) => {
    tree.groups.forEach((group, gi) => {
      out.filters += group.filters.length;
      group.filters.forEach((f, fi) => checkFilter(f, join(path, ['groups', gi, 'filters', fi]), errors, out, opts.executionFields === true));
      if (group.conditions) walk(group.conditions, join(path, ['groups', gi, 'conditions']));
    });
  };
  walk(parsed.data, prefix);
  return errors.length > 0 ? { errors } : { ok: out };
}

/**
 * Validates a condition tree: size, structure, fields, operators per field kind, units, value
 * types, and referenced segments (of the project, no cycles, the whole referenced graph within
 * the expanded limits). Throws 422 VALIDATION_ERROR whose `errors[].field` is
 * `${fieldPrefix}.groups.<g>.filters.<f>.<field|operator|value|unit>` (or the prefix for limits).
 */
export async function validateCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: unknown,
  fieldPrefix: string,
  opts: ValidateOptions = {},
): Promise<ConditionTree> {
  const checked = checkTree(tree, fieldPrefix, { executionFields: opts.executionFields });
  if (checked.errors) throw validationError(checked.errors);
  const { errors } = await resolveReferences(db, projectId, checked.ok, { prefix: fieldPrefix, selfId: opts.selfId, purpose: 'validate' });
  if (errors.length > 0) throw validationError(errors);
  return checked.ok.tree;
}
