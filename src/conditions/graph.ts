import { type Kysely, sql } from 'kysely';
import type { Database, SegmentType } from '../db/schema.js';
import type { FieldError } from '../lib/errors.js';
import { MAX_DEPTH, MAX_EXPANDED_FILTERS, MAX_EXPANDED_REFERENCES } from './tree.js';
import { type CheckedTree, checkTree } from './validate.js';

/** A referenced segment as the compiler needs it. */
export interface SegmentNode {
  id: string;
  type: SegmentType;
  tracked: boolean;
  /** Its condition, for the segments whose condition is followed (see `purpose`). */
  checked?: CheckedTree;
}

export interface ResolvedReferences {
  /** Every referenced segment found in the project, by lower-cased id (missing ones are absent). */
  nodes: Map<string, SegmentNode>;
  /** The followed segments, each after the segments it references (the order to define them in). */
  order: string[];
  errors: FieldError[];
}

export interface ResolveOptions {
  /** Field of the condition (limits are reported on it). */
  prefix: string;
  /** The segment whose condition this is: a reference back to it is a cycle. */
  selfId?: string | undefined;
  /**
   * `validate` (a condition being written): every DYNAMIC segment's condition is followed (a
   * tracked segment could stop tracking later) and a direct reference to a missing segment is an
   * error. `compile`: only the conditions compiled live (DYNAMIC untracked) are followed; a
   * missing segment has no members.
   */
  purpose: 'validate' | 'compile';
}

const tooBig = (prefix: string, what: string, max: number): FieldError => ({
  field: prefix,
  message: `The condition exceeds the maximum of ${max} ${what} after expanding referenced segments`,
  code: 'too_big',
});

/**
 * Loads the graph of segments a condition references, each segment once: one set-based query per
 * level of references (at most MAX_DEPTH), never one per reference. Counts filters and references
 * over the condition and every followed segment (each once) and stops loading as soon as a limit
 * is passed, so the work is bounded by the limits whatever is stored. Also reports cycles, chains
 * longer than MAX_DEPTH and followed segments whose stored condition no longer passes `checkTree`.
 */
export async function resolveReferences(db: Kysely<Database>, projectId: string, root: CheckedTree, opts: ResolveOptions): Promise<ResolvedReferences> {
  const nodes = new Map<string, SegmentNode>();
  const errors: FieldError[] = [];
  const self = opts.selfId?.toLowerCase();
  let filters = root.filters;
  let references = root.references;
  const overLimit = () => {
    if (filters > MAX_EXPANDED_FILTERS) errors.push(tooBig(opts.prefix, 'filters', MAX_EXPANDED_FILTERS));
    else if (references > MAX_EXPANDED_REFERENCES) errors.push(tooBig(opts.prefix, 'segment references', MAX_EXPANDED_REFERENCES));
    else return false;
    return true;
  };
  if (overLimit()) return { nodes, order: [], errors };
  // Where each segment was first reached from the condition: errors deep in the graph name it.
  const via = new Map(root.segments);
  for (const [id, at] of root.segments) {
    if (id === self) errors.push({ field: at, message: 'A segment cannot reference itself', code: 'segment_cycle', received: id });
  }
  let frontier = [...root.segments.keys()];
  for (let level = 0; frontier.length > 0; level++) {
    if (level >= MAX_DEPTH) {
      const at = via.get(frontier[0] ?? '') ?? opts.prefix;
      errors.push({ field: at, message: `Segment references nest at most ${MAX_DEPTH} levels deep`, code: 'too_deep' });
      return { nodes, order: [], errors };
    }
    const { rows } = await sql<{ id: string; type: SegmentType; condition: unknown; track_membership: boolean }>`
      SELECT id, type, condition, track_membership FROM segments
      WHERE project_id = ${projectId}::uuid AND id = ANY(${frontier}::uuid[])`.execute(db);
    const found = new Map(rows.map((r) => [r.id, r]));
    const next: string[] = [];
    for (const id of frontier) {
      const at = via.get(id) ?? opts.prefix;
      const row = found.get(id);
      if (!row) {
        if (level === 0 && opts.purpose === 'validate') {
          errors.push({ field: at, message: `Segment ${id} not found in this project`, code: 'unknown_segment', received: id });
        }
        continue;
      }
      const node: SegmentNode = { id, type: row.type, tracked: row.track_membership };
      nodes.set(id, node);
      const followed = row.type === 'DYNAMIC' && (opts.purpose === 'validate' || !row.track_membership);
      if (!followed) continue;
      const checked = checkTree(row.condition, 'condition');
      if (checked.errors) {
        const first = checked.errors[0];
        errors.push({
          field: at,
          message: `Segment ${id} has a stored condition that cannot be used (${first?.field}: ${first?.message}): correct that segment`,
          code: 'invalid_segment',
          received: id,
        });
        continue;
      }
      node.checked = checked.ok;
      filters += checked.ok.filters;
      references += checked.ok.references;
      if (overLimit()) return { nodes, order: [], errors };
      for (const ref of checked.ok.segments.keys()) {
        if (ref === self) errors.push({ field: at, message: `Segment ${id} references this segment (cycle)`, code: 'segment_cycle', received: id });
        if (!via.has(ref)) {
          via.set(ref, at);
          next.push(ref);
        }
      }
    }
    frontier = next;
  }
  return { nodes, order: errors.length > 0 ? [] : orderOf(nodes, root, via, errors), errors };
}

/**
 * The followed segments in definition order (each after those it references), reporting cycles
 * and chains longer than MAX_DEPTH. Recursion depth is bounded by the number of segments, itself
 * bounded by MAX_EXPANDED_REFERENCES.
 */
function orderOf(nodes: Map<string, SegmentNode>, root: CheckedTree, via: Map<string, string>, errors: FieldError[]): string[] {
  const order: string[] = [];
  const height = new Map<string, number>(); // done: longest chain of followed segments from it
  const onPath = new Set<string>();
  const visit = (id: string): number => {
    const node = nodes.get(id);
    if (!node?.checked) return 0;
    const known = height.get(id);
    if (known !== undefined) return known;
    if (onPath.has(id)) {
      errors.push({ field: via.get(id) ?? '', message: `Segment references form a cycle through segment ${id}`, code: 'segment_cycle', received: id });
      return 0;
    }
    onPath.add(id);
    let below = 0;
    for (const ref of node.checked.segments.keys()) below = Math.max(below, visit(ref));
    onPath.delete(id);
    height.set(id, below + 1);
    order.push(id);
    return below + 1;
  };
  for (const id of root.segments.keys()) {
    if (visit(id) > MAX_DEPTH) {
      errors.push({ field: via.get(id) ?? '', message: `Segment references nest at most ${MAX_DEPTH} levels deep`, code: 'too_deep' });
    }
  }
  return order;
}
