import { BaseEdge, type Edge, EdgeLabelRenderer, type EdgeProps, getSmoothStepPath, Handle, type Node, type NodeProps, Position } from '@xyflow/react';
import { Plus } from 'lucide-react';
import { formatNumber } from '@/lib/format';
import { cn } from '@/lib/cn';
import { type Branch, type InsertAt, SLOT_SIZE, STEP_LABELS, STEP_SIZE, type StepType } from './graph';
import { STEP_STYLE, StepChip } from './parts';

export interface StepNodeData extends Record<string, unknown> {
  type: StepType;
  name: string;
  summary: string;
  stats: { entered: number; waiting: number; completed: number; failed: number; sent?: number; opened?: number; clicked?: number };
  selected: boolean;
}
export type StepFlowNode = Node<StepNodeData, 'step'>;

export interface SlotNodeData extends Record<string, unknown> {
  at: InsertAt;
  label: string;
  onInsert: (at: InsertAt) => void;
}
export type SlotFlowNode = Node<SlotNodeData, 'slot'>;

export interface InsertEdgeData extends Record<string, unknown> {
  label: string | undefined;
  branch: Branch | null;
  /** Undefined on the edge to a slot (the slot is the "+"). */
  at: InsertAt | undefined;
  describe: string;
  onInsert: (at: InsertAt) => void;
}
export type InsertFlowEdge = Edge<InsertEdgeData, 'insert'>;

const handle = '!size-2 !min-h-0 !min-w-0 !border-0 !bg-border';

function Counter({ label, value, tone }: { label: string; value: number; tone?: string }) {
  return (
    <span className="grid" title={`${formatNumber(value)} ${label}`}>
      <span className={cn('text-xs font-semibold tabular-nums', tone)}>{formatNumber(value)}</span>
      <span className="text-[10px] text-fg-muted">{label}</span>
    </span>
  );
}

export function StepNodeView({ data }: NodeProps<StepFlowNode>) {
  const s = data.stats;
  return (
    <div
      role="group"
      aria-label={`${STEP_LABELS[data.type]} step ${data.name}`}
      className={cn('relative flex overflow-hidden rounded-md border bg-surface text-left shadow-sm', data.selected ? 'border-accent ring-2 ring-accent/40' : 'border-border')}
      style={{ width: STEP_SIZE.width, height: STEP_SIZE.height }}
    >
      <span aria-hidden className={cn('w-1 shrink-0', STEP_STYLE[data.type].bar)} />
      <Handle type="target" position={Position.Top} className={handle} isConnectable={false} />
      <div className="flex min-w-0 flex-1 flex-col justify-between px-2.5 py-2">
        <div className="flex min-w-0 items-center gap-2">
          <StepChip type={data.type} className="size-6" />
          <div className="min-w-0">
            <p className="truncate text-[10px] font-medium tracking-wide text-fg-muted uppercase">{STEP_LABELS[data.type]}</p>
            <p className="truncate text-sm leading-tight font-medium">{data.name}</p>
          </div>
        </div>
        <p className="truncate text-xs text-fg-muted" title={data.summary}>
          {data.summary}
        </p>
        <div className="flex gap-3" aria-label="Step counters">
          <Counter label="entered" value={s.entered} />
          <Counter label="waiting" value={s.waiting} tone={s.waiting ? 'text-warn' : undefined} />
          <Counter label="done" value={s.completed} tone={s.completed ? 'text-ok' : undefined} />
          <Counter label="failed" value={s.failed} tone={s.failed ? 'text-bad' : undefined} />
          {s.sent !== undefined ? <Counter label="opened" value={s.opened ?? 0} /> : null}
        </div>
      </div>
      <Handle type="source" position={Position.Bottom} className={handle} isConnectable={false} />
    </div>
  );
}

export function SlotNodeView({ data }: NodeProps<SlotFlowNode>) {
  return (
    <div style={{ width: SLOT_SIZE.width, height: SLOT_SIZE.height }}>
      <Handle type="target" position={Position.Top} className={handle} isConnectable={false} />
      <button
        type="button"
        aria-label={data.label}
        title={data.label}
        onClick={(e) => {
          e.stopPropagation();
          data.onInsert(data.at);
        }}
        className="nodrag flex size-full items-center justify-center rounded-full border border-dashed border-fg-muted bg-surface text-fg-muted hover:border-accent hover:text-accent focus-visible:ring-2 focus-visible:ring-accent focus-visible:outline-none"
      >
        <Plus className="size-4" />
      </button>
    </div>
  );
}

const BRANCH_TONE: Record<Branch, string> = { yes: 'text-ok', no: 'text-bad', event: 'text-accent', timeout: 'text-warn' };

export function InsertEdgeView({ id, sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, data, markerEnd }: EdgeProps<InsertFlowEdge>) {
  const [path, labelX, labelY] = getSmoothStepPath({ sourceX, sourceY, targetX, targetY, sourcePosition, targetPosition, borderRadius: 8 });
  const toSlot = data?.at === undefined;
  return (
    <>
      <BaseEdge id={id} path={path} markerEnd={markerEnd} style={toSlot ? { strokeDasharray: '4 4' } : undefined} />
      <EdgeLabelRenderer>
        <div className="nodrag nopan pointer-events-auto absolute flex flex-col items-center gap-1" style={{ transform: `translate(-50%, -50%) translate(${labelX}px, ${labelY}px)` }}>
          {data?.label && data.branch ? <span className={cn('rounded-md border border-border bg-surface px-1.5 text-[10px] font-semibold', BRANCH_TONE[data.branch])}>{data.label}</span> : null}
          {data?.at ? (
            <button
              type="button"
              aria-label={`Insert a step ${data.describe}`}
              title="Insert a step here"
              onClick={() => data.at && data.onInsert(data.at)}
              className="flex size-5 items-center justify-center rounded-full border border-border bg-surface text-fg-muted hover:border-accent hover:text-accent focus-visible:ring-2 focus-visible:ring-accent focus-visible:outline-none"
            >
              <Plus className="size-3" />
            </button>
          ) : null}
        </div>
      </EdgeLabelRenderer>
    </>
  );
}
