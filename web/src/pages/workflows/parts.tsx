import { Ban, Clock, GitBranch, Hourglass, Mail, MoreHorizontal, UserPen, Webhook, Zap, type LucideIcon } from 'lucide-react';
import { DropdownMenu as M } from 'radix-ui';
import { useCallback } from 'react';
import { useSearchParams } from 'react-router';
import type { components } from '@/api/schema';
import { Badge } from '@/components/ui/badge';
import { Button, buttonVariants } from '@/components/ui/button';
import { formatDateTime, formatNumber, formatRelative } from '@/lib/format';
import { cn } from '@/lib/cn';
import type { StepType } from './graph';

export type WorkflowListItem = components['schemas']['WorkflowListItem'];
export type WorkflowDetail = components['schemas']['WorkflowDetail'];
export type WorkflowStep = components['schemas']['WorkflowStepWithStats'];
export type WorkflowTransition = components['schemas']['WorkflowTransition'];
export type WorkflowExecution = components['schemas']['WorkflowExecution'];
export type WorkflowExecutionDetail = components['schemas']['WorkflowExecutionDetail'];
export type ExecutionStatus = WorkflowExecution['status'];

/** One colour (tokens only) and one icon per step type. */
export const STEP_STYLE: Record<StepType, { icon: LucideIcon; chip: string; bar: string }> = {
  TRIGGER: { icon: Zap, chip: 'bg-accent text-accent-fg', bar: 'bg-accent' },
  SEND_EMAIL: { icon: Mail, chip: 'bg-accent/15 text-accent', bar: 'bg-accent/50' },
  DELAY: { icon: Clock, chip: 'bg-warn/15 text-warn', bar: 'bg-warn/50' },
  WAIT_FOR_EVENT: { icon: Hourglass, chip: 'bg-warn text-bg', bar: 'bg-warn' },
  CONDITION: { icon: GitBranch, chip: 'bg-fg text-bg', bar: 'bg-fg' },
  WEBHOOK: { icon: Webhook, chip: 'bg-muted text-fg-muted', bar: 'bg-fg-muted' },
  UPDATE_CONTACT: { icon: UserPen, chip: 'bg-ok/15 text-ok', bar: 'bg-ok' },
  EXIT: { icon: Ban, chip: 'bg-bad/15 text-bad', bar: 'bg-bad' },
};

export function StepChip({ type, className }: { type: StepType; className?: string }) {
  const { icon: Icon, chip } = STEP_STYLE[type];
  return (
    <span aria-hidden className={cn('flex size-7 shrink-0 items-center justify-center rounded-md', chip, className)}>
      <Icon className="size-4" />
    </span>
  );
}

/** A time shown relative, the exact time on hover. */
export function When({ iso, className }: { iso: string; className?: string }) {
  return (
    <time dateTime={iso} title={formatDateTime(iso)} className={cn('whitespace-nowrap', className)}>
      {formatRelative(iso)}
    </time>
  );
}

const EXECUTION_TONE: Record<string, 'ok' | 'warn' | 'bad' | 'neutral' | 'accent'> = {
  RUNNING: 'accent',
  WAITING: 'warn',
  PENDING: 'warn',
  COMPLETED: 'ok',
  EXITED: 'neutral',
  SKIPPED: 'neutral',
  FAILED: 'bad',
  CANCELLED: 'neutral',
};

export function StatusBadge({ status }: { status: string }) {
  return <Badge tone={EXECUTION_TONE[status] ?? 'neutral'}>{status.charAt(0) + status.slice(1).toLowerCase()}</Badge>;
}

export const isActive = (status: string): boolean => status === 'RUNNING' || status === 'WAITING';

/** Previous / next over a page-numbered list, with "x–y of total". */
export function Pager({ page, pageSize, total, onPage }: { page: number; pageSize: number; total: number; onPage: (page: number) => void }) {
  if (total === 0) return null;
  const first = (page - 1) * pageSize + 1;
  const last = Math.min(total, page * pageSize);
  return (
    <nav aria-label="Pages" className="mt-3 flex items-center justify-end gap-3 text-sm text-fg-muted">
      <span className="tabular-nums">
        {formatNumber(first)}–{formatNumber(last)} of {formatNumber(total)}
      </span>
      <Button size="sm" variant="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </Button>
      <Button size="sm" variant="secondary" disabled={last >= total} onClick={() => onPage(page + 1)}>
        Next
      </Button>
    </nav>
  );
}

/** A positive integer from the URL, else the fallback. */
export const pageParam = (v: string | undefined): number => {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : 1;
};

/**
 * Several query parameters set at once (a new filter also goes back to page 1): two useUrlParam
 * setters called in one handler would each start from the same URL, and the last would win.
 */
export function useSetParams(): (changes: Record<string, string | undefined>) => void {
  const [, setParams] = useSearchParams();
  return useCallback(
    (changes) =>
      setParams(
        (current) => {
          const copy = new URLSearchParams(current);
          for (const [k, v] of Object.entries(changes)) {
            if (v === undefined || v === '') copy.delete(k);
            else copy.set(k, v);
          }
          return copy;
        },
        { replace: true },
      ),
    [setParams],
  );
}

const menuContent = 'z-50 min-w-48 rounded-md border border-border bg-surface p-1 shadow-md';
const menuItem = 'flex cursor-default items-center gap-2 rounded px-2 py-1.5 text-sm outline-none data-[highlighted]:bg-muted data-[disabled]:opacity-50 [&_svg]:size-4';

export interface MenuAction {
  label: string;
  icon: LucideIcon;
  onSelect: () => void;
  danger?: boolean;
  disabled?: boolean;
}

/** The "…" menu of secondary actions (UI.md). */
export function ActionsMenu({ label, actions }: { label: string; actions: MenuAction[] }) {
  return (
    <M.Root>
      <M.Trigger className={buttonVariants({ variant: 'ghost', size: 'icon', className: 'size-8' })} aria-label={label} onClick={(e) => e.stopPropagation()}>
        <MoreHorizontal />
      </M.Trigger>
      <M.Portal>
        <M.Content align="end" className={menuContent} onClick={(e) => e.stopPropagation()}>
          {actions.map((a) => (
            <M.Item key={a.label} className={cn(menuItem, a.danger && 'text-bad')} disabled={a.disabled} onSelect={a.onSelect}>
              <a.icon /> {a.label}
            </M.Item>
          ))}
        </M.Content>
      </M.Portal>
    </M.Root>
  );
}

/** "1 step", "2,000 steps". */
export const plural = (n: number, word: string): string => `${formatNumber(n)} ${word}${n === 1 ? '' : 's'}`;
