import type { HTMLAttributes, TdHTMLAttributes, ThHTMLAttributes } from 'react';
import { cn } from '@/lib/cn';
import { Skeleton } from './skeleton';

/** A table in a bordered box that scrolls on its own, with a sticky header. */
export function Table({ className, ...props }: HTMLAttributes<HTMLTableElement>) {
  return (
    <div className="max-h-[70vh] overflow-auto rounded-md border border-border bg-surface">
      <table className={cn('w-full border-collapse text-sm', className)} {...props} />
    </div>
  );
}

export function THead(props: HTMLAttributes<HTMLTableSectionElement>) {
  return <thead className="sticky top-0 z-10 bg-muted text-left text-xs text-fg-muted" {...props} />;
}

export function TBody(props: HTMLAttributes<HTMLTableSectionElement>) {
  return <tbody {...props} />;
}

/** A row; `onClick` makes it a link-like row (pointer, hover). */
export function TR({ className, onClick, ...props }: HTMLAttributes<HTMLTableRowElement>) {
  return <tr className={cn('border-t border-border', onClick && 'cursor-pointer hover:bg-muted/60', className)} onClick={onClick} {...props} />;
}

/** A header cell; `numeric` right-aligns it (numbers are right-aligned with thousands separators). */
export function TH({ className, numeric, ...props }: ThHTMLAttributes<HTMLTableCellElement> & { numeric?: boolean }) {
  return <th scope="col" className={cn('px-3 py-2 font-medium whitespace-nowrap', numeric && 'text-right', className)} {...props} />;
}

export function TD({ className, numeric, ...props }: TdHTMLAttributes<HTMLTableCellElement> & { numeric?: boolean }) {
  return <td className={cn('px-3 py-2', numeric && 'text-right tabular-nums', className)} {...props} />;
}

/** Placeholder rows while a page loads. */
export function SkeletonRows({ rows = 8, columns }: { rows?: number; columns: number }) {
  return (
    <>
      {Array.from({ length: rows }, (_, r) => (
        <tr key={r} className="border-t border-border" aria-hidden>
          {Array.from({ length: columns }, (_, c) => (
            <td key={c} className="px-3 py-2.5">
              <Skeleton className="h-4 w-full max-w-40" />
            </td>
          ))}
        </tr>
      ))}
    </>
  );
}
