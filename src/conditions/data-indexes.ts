import { boundsProblem } from './bounds.js';
import { type ConditionTree, ConditionTreeSchema, type Filter, NUMERIC_STRING } from './tree.js';

/**
 * Which per-project index on a `data.<key>` a filter can use (docs/conditions.md, "Data key
 * indexes"; built by src/modules/segments/data-indexes.ts, catalogued in contact_data_indexes):
 * - `value`: btree on contact_data_numeric(data -> key) WHERE project_id = …
 *   AND data ? key — `exists` (an index-only count) and numeric comparisons;
 * - `text`: trigram GIN on (data ->> key) with the same predicate — `contains`.
 * The other operators have an index already (equals: the GIN on data) or cannot use one
 * (the negations match most rows; dates are read by a STABLE cast, which cannot be indexed).
 */
export type DataIndexKind = 'value' | 'text';

const COMPARE = new Set(['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual']);

/** The contact data key and index kind `f` can use, if any. */
export function dataIndexUse(f: Filter): { key: string; kind: DataIndexKind } | undefined {
  if (!f.field.startsWith('data.')) return undefined;
  const key = f.field.slice('data.'.length);
  if (f.operator === 'exists') return { key, kind: 'value' };
  if (f.operator === 'contains') return { key, kind: 'text' };
  const numeric = typeof f.value === 'number' || (typeof f.value === 'string' && NUMERIC_STRING.test(f.value));
  if (COMPARE.has(f.operator) && numeric) return { key, kind: 'value' };
  return undefined;
}

/** Every (key, kind) the filters of `tree` can use, at any depth (the tree passed checkTree: depth bounded). */
export function dataIndexUses(tree: ConditionTree, out: { key: string; kind: DataIndexKind }[] = []): { key: string; kind: DataIndexKind }[] {
  for (const group of tree.groups) {
    for (const f of group.filters) {
      const use = dataIndexUse(f);
      if (use) out.push(use);
    }
    if (group.conditions) dataIndexUses(group.conditions, out);
  }
  return out;
}

/** dataIndexUses of a stored condition (not validated: checked for size first; one that does not parse uses nothing). */
export function storedDataIndexUses(raw: unknown): { key: string; kind: DataIndexKind }[] {
  if (raw === null || boundsProblem(raw, '')) return [];
  const tree = ConditionTreeSchema.safeParse(raw);
  return tree.success ? dataIndexUses(tree.data) : [];
}
