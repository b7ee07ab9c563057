import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Database } from '../db/schema.js';
import { compileCondition as compile } from './compile.js';
import type { ConditionTree } from './tree.js';
import { validateCondition as validate, type ValidateOptions } from './validate.js';

export { ConditionTreeSchema, type ConditionTree } from './tree.js';
export { referencedSegmentIds, type ValidateOptions } from './validate.js';

/**
 * Throws ApiError 422 VALIDATION_ERROR whose errors[] name the filter, e.g. field
 * `condition.groups.0.filters.1.operator` (prefix given by caller). Checks fields, operators per
 * field kind, units, value types, referenced segments exist in the project (and no cycles).
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

/** ONE SQL boolean expression over the contacts row aliased `alias` (default 'c'); values always bound parameters. */
export async function compileCondition(
  db: Kysely<Database>,
  projectId: string,
  tree: ConditionTree,
  alias?: string,
): Promise<RawBuilder<SqlBool>> {
  return compile(db, projectId, tree, alias);
}

/**
 * True when the stored condition tree in `column` (jsonb) has a filter on `field` (`data.<key>`,
 * `event.<name>`, …) at any depth: for usage reports of segments and campaign audiences.
 */
export const conditionUsesField = (column: RawBuilder<unknown>, field: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`jsonb_path_exists(${column}, '$.** ? (@.field == $f)', jsonb_build_object('f', ${field}::text))`;
