import { Checkbox as C } from 'radix-ui';
import type { ReactNode } from 'react';
import { Check, Minus } from 'lucide-react';
import type { components } from '@/api/schema';
import { formatDateTime, formatNumber, formatRelative } from '@/lib/format';
import { cn } from '@/lib/cn';

export type Contact = components['schemas']['Contact'];

/** A contact job's status (GET /contacts/bulk/{jobId} and GET /contacts/import/{jobId} answer the same shape). */
export interface JobStatus {
  id: string;
  kind: string;
  status: 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';
  total: number;
  processed: number;
  failed: number;
  errors: { row: number; message: string }[];
}

export const isRunning = (job: Pick<JobStatus, 'status'> | undefined): boolean => !job || job.status === 'PENDING' || job.status === 'PROCESSING';

/** A determinate progress bar (role progressbar with its value), or an indeterminate one while the total is unknown. */
export function ProgressBar({ value, max, label }: { value: number; max: number; label: string }) {
  const pct = max > 0 ? Math.min(100, Math.round((value / max) * 100)) : 0;
  return (
    <div className="grid gap-1">
      <div className="flex justify-between text-xs text-fg-muted">
        <span>{label}</span>
        <span className="tabular-nums">
          {formatNumber(value)} of {formatNumber(max)}
        </span>
      </div>
      <div role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={max} aria-valuenow={value} className="h-2 overflow-hidden rounded-md bg-muted">
        <div className="h-full bg-accent transition-[width]" style={{ width: `${pct}%` }} />
      </div>
    </div>
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

/** A labelled checkbox (Radix), `indeterminate` for a partial selection. */
export function CheckBox({ checked, onChange, label, className }: { checked: boolean | 'indeterminate'; onChange: (checked: boolean) => void; label: string; className?: string }) {
  return (
    <C.Root
      checked={checked}
      onCheckedChange={(v) => onChange(v === true)}
      aria-label={label}
      onClick={(e) => e.stopPropagation()}
      className={cn('flex size-4 items-center justify-center rounded-sm border border-border bg-surface data-[state=checked]:border-accent data-[state=checked]:bg-accent data-[state=indeterminate]:border-accent data-[state=indeterminate]:bg-accent', className)}
    >
      <C.Indicator className="text-accent-fg">{checked === 'indeterminate' ? <Minus className="size-3" /> : <Check className="size-3" />}</C.Indicator>
    </C.Root>
  );
}

/** The row errors of a job (the first 1,000 are kept by the server). */
export function JobErrors({ job, rowLabel, hint }: { job: JobStatus; rowLabel: (row: number) => string; hint?: string }) {
  if (job.errors.length === 0) return null;
  return (
    <div className="grid gap-1">
      <p className="text-sm font-medium text-bad">
        {formatNumber(job.failed)} {job.failed === 1 ? 'row' : 'rows'} failed{job.failed > job.errors.length ? ` (the first ${formatNumber(job.errors.length)} are listed)` : ''}
      </p>
      <ul aria-label="Row errors" className="max-h-40 overflow-auto rounded-md border border-border text-xs">
        {job.errors.map((e, i) => (
          <li key={i} className="flex gap-3 border-t border-border px-3 py-1.5 first:border-t-0">
            <span className="shrink-0 font-medium tabular-nums">{rowLabel(e.row)}</span>
            <span className="text-fg-muted">{e.message}</span>
          </li>
        ))}
      </ul>
      {hint ? <p className="text-xs text-fg-muted">{hint}</p> : null}
    </div>
  );
}

const DOT = { ok: 'bg-ok', warn: 'bg-warn', bad: 'bg-bad', neutral: 'bg-fg-muted', accent: 'bg-accent' } as const;

/**
 * A status: a dot in the status colour beside text in the body colour. (The shared Badge's
 * coloured text on its tinted background is under the WCAG AA contrast ratio at text-xs.)
 */
export function Status({ tone, children, className }: { tone: keyof typeof DOT; children: ReactNode; className?: string }) {
  return (
    <span className={cn('inline-flex items-center gap-1.5 text-xs whitespace-nowrap', className)}>
      <span aria-hidden className={cn('size-2 shrink-0 rounded-full', DOT[tone])} />
      {children}
    </span>
  );
}
