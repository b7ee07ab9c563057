import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import { compileCondition as compile, type CompileOptions } from './compile.js';
import type { ConditionTree } from './tree.js';
import { validateCondition as validate, type ValidateOptions } from './validate.js';

export { ConditionTreeSchema, type ConditionTree, MAX_DEPTH, MAX_EXPANDED_FILTERS, MAX_EXPANDED_REFERENCES, MAX_FILTERS, MAX_GROUPS } from './tree.js';
export type { CompileOptions } from './compile.js';
export { storedDataIndexUses, type DataIndexKind } from './data-indexes.js';
export type { ValidateOptions } from './validate.js';

/**
 * Throws ApiError 422 VALIDATION_ERROR whose errors[] name the filter, e.g. field
 * `condition.groups.0.filters.1.operator` (prefix given by caller). Checks size limits (depth,
 * groups, filters) before anything recursive, fields, operators per field kind, units, value
 * types (dates: src/lib/dates.ts), and the referenced segments: of the project, no cycles, and
 * the whole referenced graph within MAX_EXPANDED_FILTERS / MAX_EXPANDED_REFERENCES.
 */
export async function validateCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: unknown,
  fieldPrefix: string,
  opts?: ValidateOptions,
): Promise<ConditionTree> {
  return validate(db, projectId, tree, fieldPrefix, opts);
}

/**
 * ONE SQL boolean expression over the contacts row aliased `alias` (default 'c'); values always
 * bound parameters. A filter: TRUE for members, FALSE or NULL otherwise (use it in WHERE, never
 * negated). `tree` may be stored data: it is checked again, with the segments it
 * references, and anything unusable is a 422 (field `opts.fieldPrefix`, default `condition`).
 */
export async function compileCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: unknown,
  alias?: string,
  opts?: CompileOptions,
): Promise<RawBuilder<SqlBool>> {
  return compile(db, projectId, tree, alias, opts);
}

/**
 * True when the stored condition tree in `column` (jsonb) has a filter on `field` (`data.<key>`,
 * `event.<name>`, …) at any depth: for usage reports of segments and campaign audiences.
 */
export const conditionUsesField = (column: RawBuilder<unknown>, field: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`jsonb_path_exists(${column}, '$.** ? (@.field == $f)', jsonb_build_object('f', ${field}::text))`;
/** Workflow CONDITION steps: the single-filter form's schema, and the operators each field kind takes (GET /workflows/fields). */
export { FilterSchema, OPERATORS_BY_KIND, parseField, type Filter, type FieldKind } from './tree.js';
