import { ArrowDownRight, ArrowRight, ArrowUpRight, Sparkles } from 'lucide-react';
import type { ReactNode } from 'react';
import { Card } from '@/components/ui/card';
import { Skeleton } from '@/components/ui/skeleton';
import { cn } from '@/lib/cn';
import type { Change } from './insight';

/** Which way is good for a number (sends up is good, bounces up is bad). */
export type Better = 'up' | 'down' | 'neither';

/** A change against the previous period: arrow, text, and the colour of good or bad news. */
export function TrendBadge({ direction, text, better = 'up', against }: { direction: Change['direction']; text: string; better?: Better; against: string }) {
  if (direction === 'none' || text === '') {
    return (
      <span className="text-xs text-fg-muted" title={`Nothing in ${against} to compare with`}>
        no earlier data
      </span>
    );
  }
  const good = better === 'neither' || direction === 'flat' ? undefined : (direction === 'up' || direction === 'new') === (better === 'up');
  const Icon = direction === 'new' ? Sparkles : direction === 'up' ? ArrowUpRight : direction === 'down' ? ArrowDownRight : ArrowRight;
  return (
    <span className="inline-flex items-center gap-0.5 text-xs font-medium text-fg tabular-nums" title={`Compared with ${against}`}>
      {/* The colour on the arrow only: small green text is below the contrast text needs. */}
      <Icon className={cn('size-3.5', good === true ? 'text-ok' : good === false ? 'text-bad' : 'text-fg-muted')} aria-hidden />
      {text}
      <span className="sr-only"> compared with {against}</span>
    </span>
  );
}

/** A number of a period with its change against the previous one. */
export function StatCard({ label, value, trend, hint, loading }: { label: string; value: ReactNode; trend?: ReactNode; hint?: ReactNode; loading?: boolean }) {
  return (
    <Card className="grid gap-1 p-4">
      <span className="text-xs font-medium text-fg-muted">{label}</span>
      {loading ? (
        <Skeleton className="h-7 w-20" />
      ) : (
        <span className="text-2xl font-semibold tabular-nums" data-stat={label}>
          {value}
        </span>
      )}
      <span className="flex min-h-4 items-center gap-2">{loading ? <Skeleton className="h-3 w-24" /> : trend}</span>
      {hint ? <span className="text-xs text-fg-muted">{hint}</span> : null}
    </Card>
  );
}
