import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { type FieldError, validationError } from '../http/errors.js';
import {
  type ConditionTree,
  ConditionTreeSchema,
  type FieldRef,
  type Filter,
  ISO_DATE_PREFIX,
  MAX_DEPTH,
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
}

const join = (prefix: string, path: readonly PropertyKey[]) =>
  [prefix, ...path.map(String)].filter((p) => p !== '').join('.');

/** A date string the API accepts: ISO 8601 (at least YYYY-MM-DD) that parses. */
export const isIsoDate = (v: unknown): v is string => typeof v === 'string' && ISO_DATE_PREFIX.test(v) && !Number.isNaN(Date.parse(v));
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
      return isIsoDate(v) ? undefined : 'must be an ISO 8601 date string';
    case 'data':
      if (f.operator === 'equals' || f.operator === 'notEquals') {
        return typeof v === 'string' || typeof v === 'boolean' || isFiniteNumber(v) ? undefined : 'must be a string, number or boolean';
      }
      if (f.operator === 'contains' || f.operator === 'notContains') {
        return typeof v === 'string' || isFiniteNumber(v) ? undefined : 'must be a string or number';
      }
      // greaterThan … lessThanOrEqual: numbers (or numeric strings) compare numerically, ISO dates as dates.
      return isFiniteNumber(v) || (typeof v === 'string' && NUMERIC_STRING.test(v)) || isIsoDate(v)
        ? undefined
        : 'must be a number, a numeric string or an ISO 8601 date string';
    default:
      return undefined;
  }
}

interface Walked {
  errors: FieldError[];
  segments: Map<string, string>; // segment id -> field path of its first reference
}

function walkTree(tree: ConditionTree, path: string, depth: number, out: Walked): void {
  if (depth > MAX_DEPTH) {
    out.errors.push({ field: path, message: `Conditions nest at most ${MAX_DEPTH} levels deep`, code: 'too_deep' });
    return;
  }
  tree.groups.forEach((group, gi) => {
    group.filters.forEach((f, fi) => checkFilter(f, join(path, ['groups', gi, 'filters', fi]), out));
    if (group.conditions) walkTree(group.conditions, join(path, ['groups', gi, 'conditions']), depth + 1, out);
  });
}

function checkFilter(f: Filter, at: string, out: Walked): void {
  const ref = parseField(f.field);
  if (!ref) {
    out.errors.push({ field: `${at}.field`, message: `Unknown field "${f.field}"`, code: 'unknown_field', received: f.field });
    return;
  }
  if (!OPERATORS_BY_KIND[ref.kind].includes(f.operator)) {
    out.errors.push({
      field: `${at}.operator`,
      message: `Operator "${f.operator}" is not valid for field "${f.field}" (allowed: ${OPERATORS_BY_KIND[ref.kind].join(', ')})`,
      code: 'invalid_operator',
      received: f.operator,
    });
    return;
  }
  if (WINDOWED.includes(f.operator) && f.unit === undefined) {
    out.errors.push({ field: `${at}.unit`, message: 'Required for this operator (minutes, hours or days)', code: 'required' });
  }
  const problem = valueProblem(ref, f);
  if (problem) out.errors.push({ field: `${at}.value`, message: `Value ${problem}`, code: 'invalid_value', received: f.value });
  if (ref.kind === 'segment') {
    if (!UUID.test(ref.id)) {
      out.errors.push({ field: `${at}.field`, message: `"${ref.id}" is not a segment id`, code: 'unknown_segment', received: f.field });
    } else if (!out.segments.has(ref.id.toLowerCase())) {
      out.segments.set(ref.id.toLowerCase(), `${at}.field`);
    }
  }
}

/** Segment ids referenced by a stored (already validated) condition; tolerant of any shape. */
export function referencedSegmentIds(stored: unknown): string[] {
  const parsed = ConditionTreeSchema.safeParse(stored);
  if (!parsed.success) return [];
  const ids: string[] = [];
  const visit = (t: ConditionTree) => {
    for (const g of t.groups) {
      for (const f of g.filters) {
        const ref = parseField(f.field);
        if (ref?.kind === 'segment') ids.push(ref.id.toLowerCase());
      }
      if (g.conditions) visit(g.conditions);
    }
  };
  visit(parsed.data);
  return ids;
}

/** Referenced segments must be of the project; following DYNAMIC ones must not come back to `selfId`. */
async function checkSegments(db: Kysely<Database>, projectId: string, w: Walked, selfId: string | undefined): Promise<void> {
  if (w.segments.size === 0) return;
  const self = selfId?.toLowerCase();
  for (const [id, at] of w.segments) {
    if (id === self) w.errors.push({ field: at, message: 'A segment cannot reference itself', code: 'segment_cycle', received: id });
  }
  let frontier = [...w.segments.keys()];
  const seen = new Set(frontier);
  const roots = new Map(frontier.map((id) => [id, w.segments.get(id) ?? '']));
  for (let level = 0; frontier.length > 0; level++) {
    const rows = await db
      .selectFrom('segments')
      .select(['id', 'type', 'condition'])
      .where('project_id', '=', projectId)
      .where('id', 'in', frontier)
      .execute();
    const found = new Map(rows.map((r) => [r.id, r]));
    const next: string[] = [];
    for (const id of frontier) {
      const at = roots.get(id) ?? '';
      const row = found.get(id);
      if (!row) {
        if (level === 0) w.errors.push({ field: at, message: `Segment ${id} not found in this project`, code: 'unknown_segment', received: id });
        continue;
      }
      if (row.type !== 'DYNAMIC') continue;
      for (const ref of referencedSegmentIds(row.condition)) {
        if (ref === self) w.errors.push({ field: at, message: `Segment ${id} references this segment (cycle)`, code: 'segment_cycle', received: id });
        if (!seen.has(ref) && UUID.test(ref)) {
          seen.add(ref);
          roots.set(ref, at);
          next.push(ref);
        }
      }
    }
    if (level >= MAX_DEPTH && next.length > 0) {
      w.errors.push({ field: roots.get(next[0] ?? '') ?? '', message: 'Segment references nest too deeply', code: 'too_deep' });
      return;
    }
    frontier = next;
  }
}

/**
 * Validates a condition tree: structure (zod), fields, operators per field kind, units, value
 * types, and referenced segments (of the project, no cycles). Throws 422 VALIDATION_ERROR whose
 * `errors[].field` is `${fieldPrefix}.groups.<g>.filters.<f>.<field|operator|value|unit>`.
 */
export async function validateCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: unknown,
  fieldPrefix: string,
  opts: ValidateOptions = {},
): Promise<ConditionTree> {
  const parsed = ConditionTreeSchema.safeParse(tree);
  if (!parsed.success) {
    throw validationError(
      parsed.error.issues.map((i) => ({ field: join(fieldPrefix, i.path), message: i.message, code: i.code })),
    );
  }
  const walked: Walked = { errors: [], segments: new Map() };
  walkTree(parsed.data, fieldPrefix, 0, walked);
  await checkSegments(db, projectId, walked, opts.selfId);
  if (walked.errors.length > 0) throw validationError(walked.errors);
  return parsed.data;
}
