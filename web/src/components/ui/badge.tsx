import { cva, type VariantProps } from 'class-variance-authority';
import type { HTMLAttributes } from 'react';
import { cn } from '@/lib/cn';

/** Status colours only for status: green done/enabled, amber waiting, red failed, grey draft. */
const badge = cva('inline-flex items-center gap-1 rounded-md px-1.5 py-0.5 text-xs font-medium', {
  variants: {
    tone: {
      neutral: 'bg-muted text-fg-muted',
      ok: 'bg-ok/10 text-ok-text',
      warn: 'bg-warn/10 text-warn-text',
      bad: 'bg-bad/10 text-bad-text',
      accent: 'bg-accent/10 text-accent-text',
    },
  },
  defaultVariants: { tone: 'neutral' },
});

export function Badge({ className, tone, ...props }: HTMLAttributes<HTMLSpanElement> & VariantProps<typeof badge>) {
  return <span className={cn(badge({ tone }), className)} {...props} />;
}
