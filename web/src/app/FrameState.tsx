import type { UseQueryResult } from '@tanstack/react-query';
import { ErrorState } from '@/components/page';
import { Skeleton } from '@/components/ui/skeleton';

/**
 * What the app's frame shows while a query it needs before any page (the user, the projects)
 * loads or after it failed; null once it has data.
 */
export function FrameState({ query }: { query: Pick<UseQueryResult, 'isPending' | 'error' | 'refetch'> }) {
  if (query.isPending) {
    return (
      <div className="p-8" aria-busy="true">
        <Skeleton className="h-6 w-48" />
      </div>
    );
  }
  if (query.error) {
    return (
      <div className="p-8">
        <ErrorState error={query.error} onRetry={() => void query.refetch()} />
      </div>
    );
  }
  return null;
}
