import { Graph, layout } from '@dagrejs/dagre';

/**
 * The workflow canvas's logic, with no React and no DOM: steps + transitions → nodes + edges
 * (branch labels, "+" slots on open outputs), where a new step is linked, and the top-to-bottom
 * layout with dagre that keeps the positions the user dragged. Unit tests:
 * test/web/workflow-layout.test.ts.
 */

export type StepType = 'TRIGGER' | 'SEND_EMAIL' | 'DELAY' | 'WAIT_FOR_EVENT' | 'CONDITION' | 'WEBHOOK' | 'UPDATE_CONTACT' | 'EXIT';
export type Branch = 'yes' | 'no' | 'event' | 'timeout';

export interface StepLike {
  id: string;
  type: StepType;
  config: Record<string, unknown>;
  position: { x: number; y: number };
}

export interface TransitionLike {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: Branch | null;
}

/** Step types a user can add (the TRIGGER comes with the workflow). */
export const ADDABLE_TYPES: readonly Exclude<StepType, 'TRIGGER'>[] = ['SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'];

export const STEP_LABELS: Record<StepType, string> = {
  TRIGGER: 'Trigger',
  SEND_EMAIL: 'Send email',
  DELAY: 'Delay',
  WAIT_FOR_EVENT: 'Wait for event',
  CONDITION: 'Condition',
  WEBHOOK: 'Webhook',
  UPDATE_CONTACT: 'Update contact',
  EXIT: 'Exit',
};

export const BRANCH_LABELS: Record<Branch, string> = { yes: 'Yes', no: 'No', event: 'Event', timeout: 'Timeout' };

/** The outputs a step has: one unbranched, yes/no, event (and timeout when configured), none for EXIT. */
export function outputsOf(type: StepType, config: Record<string, unknown>): (Branch | null)[] {
  switch (type) {
    case 'EXIT':
      return [];
    case 'CONDITION':
      return ['yes', 'no'];
    case 'WAIT_FOR_EVENT':
      return typeof config.timeout === 'number' && config.timeout > 0 ? ['event', 'timeout'] : ['event'];
    default:
      return [null];
  }
}

export interface StepNode<S extends StepLike = StepLike> {
  kind: 'step';
  id: string;
  step: S;
}

/** A "+" placeholder on an output with no transition yet (a leaf). */
export interface SlotNode {
  kind: 'slot';
  id: string;
  fromStepId: string;
  branch: Branch | null;
}

export type GraphNode<S extends StepLike = StepLike> = StepNode<S> | SlotNode;

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  branch: Branch | null;
  /** Yes / No / Event / Timeout, or none for an unbranched edge. */
  label: string | undefined;
  /** The transition the edge draws; undefined for the edge to a slot. */
  transitionId: string | undefined;
}

export interface WorkflowGraph<S extends StepLike = StepLike> {
  nodes: GraphNode<S>[];
  edges: GraphEdge[];
}

export const slotId = (fromStepId: string, branch: Branch | null): string => `slot:${fromStepId}:${branch ?? 'next'}`;

const branchOrder = (b: Branch | null): number => (b === null ? 0 : ['yes', 'event', 'no', 'timeout'].indexOf(b) + 1);

/** Nodes for the steps and for their open outputs, edges for the transitions and to the slots. */
export function buildGraph<S extends StepLike>(steps: readonly S[], transitions: readonly TransitionLike[]): WorkflowGraph<S> {
  const ids = new Set(steps.map((s) => s.id));
  const nodes: GraphNode<S>[] = [];
  const edges: GraphEdge[] = [];
  const sorted = [...transitions].filter((t) => ids.has(t.fromStepId) && ids.has(t.toStepId)).sort((a, b) => branchOrder(a.branch) - branchOrder(b.branch));
  for (const t of sorted) {
    edges.push({ id: t.id, source: t.fromStepId, target: t.toStepId, branch: t.branch, label: t.branch ? BRANCH_LABELS[t.branch] : undefined, transitionId: t.id });
  }
  for (const step of steps) {
    nodes.push({ kind: 'step', id: step.id, step });
    const used = new Set(sorted.filter((t) => t.fromStepId === step.id).map((t) => t.branch));
    // A WAIT_FOR_EVENT's legacy branch-less edge stands for its event output.
    if (step.type === 'WAIT_FOR_EVENT' && used.has(null)) used.add('event');
    for (const branch of outputsOf(step.type, step.config)) {
      if (used.has(branch)) continue;
      const id = slotId(step.id, branch);
      nodes.push({ kind: 'slot', id, fromStepId: step.id, branch });
      edges.push({ id: `edge:${id}`, source: step.id, target: id, branch, label: branch ? BRANCH_LABELS[branch] : undefined, transitionId: undefined });
    }
  }
  return { nodes, edges };
}

/** Where a new step goes: on an existing transition (between two steps) or on an open output. */
export type InsertAt = { kind: 'edge'; transition: TransitionLike } | { kind: 'slot'; fromStepId: string; branch: Branch | null };

/**
 * How POST /workflows/:id/steps links the new step at a place, in the same request (the server
 * does it in one transaction): on an edge A→B (branch b) `insert` makes A→new with b and new→B
 * with the new step's first output; on a slot `after` links the open output to the new step.
 */
export type InsertTarget = { insert: { transitionId: string } } | { after: { stepId: string; branch: Branch | null } };

/** Types that can go at a place: no EXIT in the middle of an edge (it has no output). */
export function typesFor(at: InsertAt): Exclude<StepType, 'TRIGGER'>[] {
  return ADDABLE_TYPES.filter((t) => at.kind === 'slot' || t !== 'EXIT');
}

/** The `insert` / `after` part of the new step's request (a step without outputs cannot go on an edge). */
export function insertTarget(at: InsertAt, type: StepType, config: Record<string, unknown>): InsertTarget {
  if (at.kind === 'slot') return { after: { stepId: at.fromStepId, branch: at.branch } };
  if (outputsOf(type, config).length === 0) throw new Error(`${type} has no output and cannot go between two steps`);
  return { insert: { transitionId: at.transition.id } };
}

/** The server places steps created without a position at (0, 150·k); such positions are not the user's. */
export const STACK_GAP = 150;
export const isAutoPosition = (p: { x: number; y: number }): boolean => p.x === 0 && p.y >= 0 && p.y % STACK_GAP === 0;
/** A dragged position to store: never one isAutoPosition would take for the server's default. */
export const pinnedPosition = (p: { x: number; y: number }): { x: number; y: number } => {
  const q = { x: Math.round(p.x), y: Math.round(p.y) };
  return isAutoPosition(q) ? { x: 1, y: q.y } : q;
};

export const STEP_SIZE = { width: 240, height: 108 };
export const SLOT_SIZE = { width: 32, height: 32 };

/**
 * Top-left positions of every node: dagre top to bottom for the whole graph; steps the user placed
 * (not isAutoPosition) keep their stored position, and the slots of such a step sit under it.
 */
export function layoutGraph(graph: WorkflowGraph): Map<string, { x: number; y: number }> {
  const g = new Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 48, ranksep: 64, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) g.setNode(n.id, { ...(n.kind === 'step' ? STEP_SIZE : SLOT_SIZE) });
  for (const e of graph.edges) g.setEdge(e.source, e.target, { label: e.label ?? '', width: e.label ? 48 : 0, height: e.label ? 20 : 0 });
  layout(g);
  const out = new Map<string, { x: number; y: number }>();
  const pinned = new Map<string, { x: number; y: number }>();
  for (const n of graph.nodes) {
    if (n.kind === 'step' && !isAutoPosition(n.step.position)) pinned.set(n.id, n.step.position);
  }
  for (const n of graph.nodes) {
    const size = n.kind === 'step' ? STEP_SIZE : SLOT_SIZE;
    const laid = g.node(n.id);
    out.set(n.id, { x: Math.round(laid.x - size.width / 2), y: Math.round(laid.y - size.height / 2) });
  }
  for (const [id, p] of pinned) out.set(id, p);
  // Slots follow a placed parent: centred under it, side by side when it has two.
  for (const n of graph.nodes) {
    if (n.kind !== 'slot') continue;
    const parent = pinned.get(n.fromStepId);
    if (!parent) continue;
    const siblings = graph.nodes.filter((m): m is SlotNode => m.kind === 'slot' && m.fromStepId === n.fromStepId);
    const i = siblings.indexOf(n);
    const spread = 96;
    const offset = (i - (siblings.length - 1) / 2) * spread;
    out.set(n.id, { x: Math.round(parent.x + STEP_SIZE.width / 2 - SLOT_SIZE.width / 2 + offset), y: parent.y + STEP_SIZE.height + 64 });
  }
  return out;
}

/** One line saying what a step does, for its node. */
export function describeStep(type: StepType, config: Record<string, unknown>, extra: { eventName?: string; templateName?: string | null } = {}): string {
  const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));
  switch (type) {
    case 'TRIGGER':
      return extra.eventName ? `When “${extra.eventName}” is tracked` : 'When the event is tracked';
    case 'SEND_EMAIL': {
      const recipient = config.recipient as { type?: string; customEmail?: string } | undefined;
      const to = recipient?.type === 'CUSTOM' && recipient.customEmail ? ` to ${recipient.customEmail}` : '';
      return extra.templateName ? `“${extra.templateName}”${to}` : extra.templateName === null ? 'Template deleted' : `Template${to}`;
    }
    case 'DELAY': {
      const amount = typeof config.amount === 'number' ? config.amount : 0;
      const unit = str(config.unit);
      return `Wait ${amount} ${amount === 1 ? unit.replace(/s$/, '') : unit}`;
    }
    case 'WAIT_FOR_EVENT': {
      const timeout = typeof config.timeout === 'number' ? config.timeout : 0;
      return `Until “${str(config.eventName)}”${timeout ? `, at most ${formatSeconds(timeout)}` : ''}`;
    }
    case 'CONDITION': {
      if ('condition' in config) {
        const tree = config.condition as TreeLike;
        const n = countFilters(tree);
        const only = groupsOf(tree)[0]?.filters?.[0];
        if (n === 1 && !hasNested(tree) && typeof only === 'object' && only !== null) return describeStep('CONDITION', only as Record<string, unknown>);
        if (n === 0) return 'If the condition matches';
        return hasNested(tree) ? `If the condition matches (${n} conditions in groups)` : `If ${tree?.logic === 'OR' ? 'any' : 'all'} of ${n} conditions match`;
      }
      const value = config.value === undefined ? '' : ` ${str(config.value)}${config.unit ? ` ${str(config.unit)}` : ''}`;
      return `If ${str(config.field)} ${str(config.operator)}${value}`;
    }
    case 'WEBHOOK':
      return `${str(config.method) || 'POST'} ${str(config.url)}`;
    case 'UPDATE_CONTACT': {
      const parts: string[] = [];
      const updates = config.updates as Record<string, unknown> | undefined;
      if (updates && Object.keys(updates).length) parts.push(`set ${Object.entries(updates).map(([k, v]) => (v === null ? `unset ${k}` : `${k} = ${String(v)}`)).join(', ')}`);
      if (config.subscribed === true) parts.push('subscribe');
      if (config.subscribed === false) parts.push('unsubscribe');
      return parts.length ? parts.join('; ').replace(/^./, (c) => c.toUpperCase()) : 'No change';
    }
    case 'EXIT':
      return typeof config.reason === 'string' && config.reason ? config.reason : 'End of the workflow';
  }
}

type TreeLike = { logic?: string; groups?: unknown[] } | undefined;
type GroupLike = { filters?: unknown[]; conditions?: TreeLike };
const groupsOf = (tree: TreeLike): GroupLike[] => (Array.isArray(tree?.groups) ? (tree.groups as GroupLike[]) : []);

/** Filters of a condition tree, nested ones included. */
function countFilters(tree: TreeLike): number {
  return groupsOf(tree).reduce((n, g) => n + (Array.isArray(g.filters) ? g.filters.length : 0) + countFilters(g.conditions), 0);
}
const hasNested = (tree: TreeLike): boolean => groupsOf(tree).some((g) => g.conditions !== undefined);

/** 90 → "1.5 minutes", 7200 → "2 hours", 172800 → "2 days". */
export function formatSeconds(s: number): string {
  const [n, unit] = s % 86_400 === 0 ? [s / 86_400, 'day'] : s % 3600 === 0 ? [s / 3600, 'hour'] : s % 60 === 0 ? [s / 60, 'minute'] : [s, 'second'];
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}
