import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { likePattern } from '../db/query.js';
import type { Database } from '../db/schema.js';
import { validationError } from '../lib/errors.js';
import { parseDate } from '../lib/dates.js';
import { resolveReferences, type SegmentNode } from './graph.js';
import { type ConditionTree, type FieldRef, type Filter, NUMERIC_STRING, parseField, type Unit } from './tree.js';
import { checkTree } from './validate.js';

type Bool = RawBuilder<SqlBool>;
const TRUE: Bool = sql<SqlBool>`TRUE`;
const FALSE: Bool = sql<SqlBool>`FALSE`;

/** Interval of one unit: a fixed literal per unit, never caller text. */
const UNIT_INTERVAL: Record<Unit, string> = { minutes: '1 minute', hours: '1 hour', days: '1 day' };
const COMPARE_SQL = { greaterThan: '>', lessThan: '<', greaterThanOrEqual: '>=', lessThanOrEqual: '<=' } as const;

interface Ctx {
  projectId: string;
  /** The contacts row alias, as an identifier. */
  c: RawBuilder<unknown>;
  /** Every referenced segment found, by lower-cased id. */
  segments: Map<string, SegmentNode>;
  /** The CTE name of each segment compiled live (DYNAMIC untracked). */
  defined: Map<string, string>;
  /** A workflow execution's event data and context: bound jsonb values or SQL expressions (CompileOptions.execution, executionSql). */
  execution?: { event: RawBuilder<unknown>; context: RawBuilder<unknown> };
}

const and = (parts: Bool[]): Bool => (parts.length === 0 ? TRUE : parts.length === 1 ? (parts[0] ?? TRUE) : sql<SqlBool>`(${sql.join(parts, sql` AND `)})`);
const or = (parts: Bool[]): Bool => (parts.length === 0 ? TRUE : parts.length === 1 ? (parts[0] ?? TRUE) : sql<SqlBool>`(${sql.join(parts, sql` OR `)})`);
const not = (e: Bool): Bool => sql<SqlBool>`NOT ${e}`;
/** `now() - value units`; the value is bound, the unit a fixed literal. */
const ago = (f: Filter) => sql`(now() - ${Number(f.value)}::double precision * interval ${sql.lit(UNIT_INTERVAL[f.unit ?? 'days'])})`;
const likeAny = (v: unknown) => likePattern(String(v));
const contains = (col: RawBuilder<unknown>, v: unknown) => sql<SqlBool>`COALESCE(${col} ILIKE ${likeAny(v)}, FALSE)`;

/** Recursion bounded by MAX_DEPTH: every tree compiled here passed `checkTree`. */
function compileTree(ctx: Ctx, tree: ConditionTree): Bool {
  const groups = tree.groups.map((group) => {
    const parts = group.filters.map((f) => compileFilter(ctx, f));
    if (group.conditions) parts.push(compileTree(ctx, group.conditions));
    return and(parts);
  });
  return tree.logic === 'OR' ? or(groups) : and(groups);
}

function compileFilter(ctx: Ctx, f: Filter): Bool {
  const ref = parseField(f.field, { execution: ctx.execution !== undefined, operator: f.operator });
  if (!ref) throw new Error(`condition not validated: unknown field ${f.field}`);
  switch (ref.kind) {
    case 'email':
      return emailFilter(ctx, f);
    case 'subscribed':
      return f.operator === 'equals' ? sql`${ctx.c}.subscribed = ${f.value === true}` : sql`${ctx.c}.subscribed <> ${f.value === true}`;
    case 'date':
      // createdAt/updatedAt are NOT NULL: compared bare, so (project_id, created_at) serves ranges.
      return dateCompare(sql`${ctx.c}.${sql.ref(ref.column)}`, f, { nullable: false });
    case 'data':
      return dataFilter(sql`${ctx.c}.data`, ref.key, f);
    case 'executionData':
      if (!ctx.execution) throw new Error('condition not validated: execution field without execution values');
      return dataFilter(ctx.execution[ref.source], ref.key, f);
    case 'event':
    case 'emailMilestone':
      return activityFilter(ctx, ref, f);
    case 'segment':
      return segmentFilter(ctx, ref.id, f);
  }
}

function emailFilter(ctx: Ctx, f: Filter): Bool {
  const col = sql`${ctx.c}.email`;
  const v = String(f.value).trim().toLowerCase(); // emails are stored lower-cased
  if (f.operator === 'equals') return sql`${col} = ${v}`;
  if (f.operator === 'notEquals') return sql`${col} <> ${v}`;
  // email is NOT NULL: bare ILIKE (no COALESCE), so the trigram index can serve it.
  const like = sql<SqlBool>`${col} ILIKE ${likeAny(v)}`;
  return f.operator === 'contains' ? like : not(like);
}

/**
 * A timestamptz expression compared by operator (ISO value) or by window (value + unit). A
 * nullable expression (a date in data) is wrapped so that NULL never reaches NOT(…).
 */
function dateCompare(col: RawBuilder<unknown>, f: Filter, opts: { nullable: boolean } = { nullable: true }): Bool {
  const compared =
    f.operator === 'within'
      ? sql`${col} >= ${ago(f)}`
      : f.operator === 'olderThan'
        ? sql`${col} < ${ago(f)}`
        : sql`${col} ${sql.raw(COMPARE_SQL[f.operator as keyof typeof COMPARE_SQL])} ${dateValue(f.value)}::timestamptz`;
  return opts.nullable ? sql`COALESCE(${compared}, FALSE)` : sql<SqlBool>`${compared}`;
}

/** The validated date as an ISO instant with its offset: PostgreSQL reads it the same in any time zone. */
function dateValue(v: unknown): string {
  const date = parseDate(v);
  if (!date) throw new Error('condition not checked: a date value does not parse');
  return date.toISOString();
}

/** The jsonb forms a value may be stored as (42 and "42"; true and "true"). */
function storedForms(v: unknown): (string | number | boolean)[] {
  if (typeof v === 'number') return [v, String(v)];
  if (typeof v === 'boolean') return [v, String(v)];
  const s = String(v);
  if (NUMERIC_STRING.test(s) && Number.isFinite(Number(s))) return [s, Number(s)];
  if (s === 'true' || s === 'false') return [s, s === 'true'];
  return [s];
}

/**
 * A filter on one key of a jsonb object (contact data, or an execution's event/context). The
 * forms a data key index can serve (exists, contains, numeric comparisons) are bare conjunctions
 * that are FALSE or NULL when they do not match, starting with `data ? key` (the indexes'
 * predicate): docs/conditions.md, "Data key indexes".
 */
function dataFilter(data: RawBuilder<unknown>, key: string, f: Filter): Bool {
  const text = sql`(${data} ->> ${key}::text)`;
  const has = sql<SqlBool>`${data} ? ${key}::text`;
  switch (f.operator) {
    case 'equals':
    case 'notEquals': {
      // `@>` is served by the jsonb_path_ops GIN index on data.
      const eq = or(storedForms(f.value).map((form) => sql<SqlBool>`${data} @> ${JSON.stringify({ [key]: form })}::jsonb`));
      return f.operator === 'equals' ? eq : not(eq);
    }
    case 'contains':
      // `data ? key` implies a `text` index's predicate; the ILIKE is its index condition.
      return sql<SqlBool>`(${has} AND ${text} ILIKE ${likeAny(f.value)})`;
    case 'notContains':
      return not(contains(text, f.value));
    case 'exists':
      return has;
    case 'notExists':
      return not(has);
    case 'within':
    case 'olderThan':
      return dateCompare(safeTimestamp(text), f);
    default: {
      const v = f.value;
      const numeric = typeof v === 'number' || (typeof v === 'string' && NUMERIC_STRING.test(v));
      if (!numeric) return dateCompare(safeTimestamp(text), f);
      const op = COMPARE_SQL[f.operator as keyof typeof COMPARE_SQL];
      // Numbers and numeric strings compare as numbers; anything else never matches (no cast error).
      // contact_data_numeric (migration 0036) is inlined: one type test per row, the regex on strings
      // only; a `value` index is on that same expression, so the compare is its index condition.
      return sql<SqlBool>`(${has} AND contact_data_numeric(${data} -> ${key}::text) ${sql.raw(op)} ${String(v).trim()}::numeric)`;
    }
  }
}

/** A data text value as timestamptz when it is a valid ISO date, else NULL (never a cast error). */
const safeTimestamp = (text: RawBuilder<unknown>) =>
  sql`(CASE WHEN ${text} ~ '^\\d{4}-\\d{2}-\\d{2}' AND pg_input_is_valid(${text}, 'timestamptz') THEN ${text}::timestamptz END)`;

function activityFilter(ctx: Ctx, ref: Extract<FieldRef, { kind: 'event' | 'emailMilestone' }>, f: Filter): Bool {
  const windowed = f.operator === 'triggeredWithin' || f.operator === 'notTriggeredWithin';
  let exists: Bool;
  if (ref.kind === 'event') {
    // Served by events (project_id, name, created_at): a semi-join for sets, or per-contact probes.
    const when = windowed ? sql` AND e.created_at >= ${ago(f)}` : f.operator === 'triggeredOlderThan' ? sql` AND e.created_at < ${ago(f)}` : sql``;
    exists = sql`EXISTS (SELECT 1 FROM events e WHERE e.project_id = ${ctx.projectId}::uuid AND e.name = ${ref.name} AND e.contact_id = ${ctx.c}.id${when})`;
  } else {
    const col = sql`m.${sql.ref(ref.column)}`;
    const when = windowed ? sql` AND ${col} >= ${ago(f)}` : f.operator === 'triggeredOlderThan' ? sql` AND ${col} < ${ago(f)}` : sql``;
    exists = sql`EXISTS (SELECT 1 FROM emails m WHERE m.contact_id = ${ctx.c}.id AND m.project_id = ${ctx.projectId}::uuid AND ${col} IS NOT NULL${when})`;
  }
  return f.operator === 'notTriggered' || f.operator === 'notTriggeredWithin' ? not(exists) : exists;
}

/**
 * A DYNAMIC untracked segment: membership of its CTE (its condition, compiled once however many
 * filters reference it). STATIC or tracked: its member rows (for tracked ones, the membership as
 * of its last compute). A missing segment has no members.
 */
function segmentFilter(ctx: Ctx, rawId: string, f: Filter): Bool {
  const id = rawId.toLowerCase();
  const cte = ctx.defined.get(id);
  const seg = ctx.segments.get(id);
  const member = cte
    ? sql<SqlBool>`${ctx.c}.id IN (SELECT id FROM ${sql.id(cte)})`
    : seg
      ? sql<SqlBool>`EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = ${id}::uuid AND sm.contact_id = ${ctx.c}.id)`
      : FALSE;
  return f.operator === 'memberOfSegment' ? member : not(member);
}

export interface CompileOptions {
  /** Field named by a 422 about the condition (default `condition`). */
  fieldPrefix?: string;
  /**
   * A workflow execution's values: enables the `event.<key>` (comparison operators) and
   * `context.<key>` fields (ValidateOptions.executionFields), compared like `data.<key>` against
   * these objects, bound as jsonb parameters. Default: none (those fields are a 422).
   */
  execution?: { event: Record<string, unknown>; context: Record<string, unknown> };
  /**
   * The same fields read from jsonb SQL expressions of the query the condition is placed in
   * (e.g. `x.event`, `x.context` of a joined workflow_executions row): one compiled condition
   * for many executions. Ignored when `execution` is given.
   */
  executionSql?: { event: RawBuilder<unknown>; context: RawBuilder<unknown> };
}

/**
 * ONE SQL boolean expression over the contacts row aliased `alias` (default `c`). Every value is
 * a bound parameter. The caller still scopes the query to the project (`c.project_id = …`); this
 * expression assumes it. Empty tree or empty group: matches every contact. A filter, so TRUE
 * for the matching contacts and FALSE *or NULL* for the others (the indexable forms of exists,
 * contains and numeric comparisons are bare; no negation is ever applied above them): use it in
 * WHERE / JOIN ON, never negated or read as a value.
 *
 * The tree may come from storage: it is checked again (`checkTree`) and so is every segment it
 * references, loaded once per level of references; whatever no longer passes, or exceeds the
 * expanded limits, is a 422 naming `fieldPrefix`, never SQL that fails. Segments compiled live
 * are defined once each, as MATERIALIZED CTEs of their member ids inside one uncorrelated
 * subquery, so the SQL grows with the number of segments, not the number of paths to them.
 */
export async function compileCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: unknown,
  alias = 'c',
  opts: CompileOptions = {},
): Promise<RawBuilder<SqlBool>> {
  const prefix = opts.fieldPrefix ?? 'condition';
  const checked = checkTree(tree, prefix, { executionFields: opts.execution !== undefined || opts.executionSql !== undefined });
  if (checked.errors) throw validationError(checked.errors);
  const execution = opts.execution
    ? { event: sql`${JSON.stringify(opts.execution.event)}::jsonb`, context: sql`${JSON.stringify(opts.execution.context)}::jsonb` }
    : opts.executionSql;
  const resolved = await resolveReferences(db, projectId, checked.ok, { prefix, purpose: 'compile' });
  if (resolved.errors.length > 0) throw validationError(resolved.errors);
  if (resolved.order.length === 0) {
    return compileTree({ projectId, c: sql.id(alias), segments: resolved.nodes, defined: new Map(), execution }, checked.ok.tree);
  }
  const inner: Ctx = { projectId, c: sql.id('c'), segments: resolved.nodes, defined: new Map() };
  const ctes = resolved.order.map((id, i) => {
    const node = resolved.nodes.get(id);
    if (!node?.checked) throw new Error(`segment ${id} ordered but not followed`);
    const name = `seg_${i}`;
    const body = compileTree(inner, node.checked.tree);
    inner.defined.set(id, name); // after its body: a segment's condition refers only to earlier CTEs
    return sql`${sql.id(name)} AS MATERIALIZED (SELECT c.id FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${body})`;
  });
  const where = compileTree({ ...inner, execution }, checked.ok.tree);
  return sql<SqlBool>`${sql.id(alias)}.id IN (WITH ${sql.join(ctes)}
    SELECT c.id FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where})`;
}
