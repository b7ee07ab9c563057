import type { FieldError } from '../lib/errors.js';
import { MAX_DEPTH, MAX_FILTERS, MAX_GROUPS } from './tree.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The first size rule a raw (unparsed) tree breaks: nesting deeper than MAX_DEPTH, more than
 * MAX_GROUPS groups or MAX_FILTERS filters over all levels. Runs before any recursive check (the
 * zod schema recurses per level, so 10,000 levels would overflow the stack): an explicit stack,
 * and it stops at the first rule broken, so its cost is bounded by the limits, not by the input.
 * Shapes it does not recognise are left to the schema.
 */
export function boundsProblem(raw: unknown, prefix: string): FieldError | undefined {
  let groups = 0;
  let filters = 0;
  const stack: { node: unknown; depth: number; path: string }[] = [{ node: raw, depth: 0, path: prefix }];
  for (let item = stack.pop(); item; item = stack.pop()) {
    if (item.depth > MAX_DEPTH) {
      return { field: item.path, message: `Conditions nest at most ${MAX_DEPTH} levels deep`, code: 'too_deep' };
    }
    const list = isObject(item.node) ? item.node.groups : undefined;
    if (!Array.isArray(list)) continue;
    groups += list.length;
    if (groups > MAX_GROUPS) {
      return { field: prefix, message: `A condition has at most ${MAX_GROUPS} groups (all nesting levels together)`, code: 'too_big' };
    }
    for (let i = 0; i < list.length; i++) {
      const group: unknown = list[i];
      if (!isObject(group)) continue;
      if (Array.isArray(group.filters)) filters += group.filters.length;
      if (filters > MAX_FILTERS) {
        return { field: prefix, message: `A condition has at most ${MAX_FILTERS} filters (all nesting levels together)`, code: 'too_big' };
      }
      if (group.conditions !== undefined) {
        const path = [item.path, 'groups', i, 'conditions'].filter((p) => p !== '').join('.');
        stack.push({ node: group.conditions, depth: item.depth + 1, path });
      }
    }
  }
  return undefined;
}
