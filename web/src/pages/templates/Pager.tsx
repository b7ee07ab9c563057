import { ChevronLeft, ChevronRight } from 'lucide-react';
import { Button } from '@/components/ui/button';
import { formatNumber } from '@/lib/format';

/** Previous/next for the APIs' page lists ({page, totalPages, total}); the page lives in the URL. */
export function Pager({ page, totalPages, total, noun, onPage }: { page: number; totalPages: number; total: number; noun: string; onPage: (page: number) => void }) {
  return (
    <nav aria-label="Pagination" className="mt-3 flex items-center justify-between text-sm text-fg-muted">
      <span>
        {formatNumber(total)} {noun}
        {total === 1 ? '' : 's'}
      </span>
      {totalPages > 1 ? (
        <div className="flex items-center gap-2">
          <Button size="sm" variant="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)} aria-label="Previous page">
            <ChevronLeft />
          </Button>
          <span>
            Page {formatNumber(page)} of {formatNumber(totalPages)}
          </span>
          <Button size="sm" variant="secondary" disabled={page >= totalPages} onClick={() => onPage(page + 1)} aria-label="Next page">
            <ChevronRight />
          </Button>
        </div>
      ) : null}
    </nav>
  );
}

/** A positive integer page number from the URL (1 for anything else). */
export const pageParam = (v: string | undefined): number => {
  const n = Number(v);
  return Number.isInteger(n) && n >= 1 ? n : 1;
};
