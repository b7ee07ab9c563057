import { Navigate, Outlet, useLocation } from 'react-router';
import { ApiError } from '@/api/client';
import { ErrorState } from '@/components/page';
import { Skeleton } from '@/components/ui/skeleton';
import { useMe } from './session';

/** Signed-in pages: without a session, to the sign-in page and back here afterwards. */
export function RequireSession() {
  const me = useMe();
  const location = useLocation();
  if (me.isPending) {
    return (
      <div className="p-8" aria-busy="true">
        <Skeleton className="h-6 w-48" />
      </div>
    );
  }
  if (me.error instanceof ApiError && me.error.status === 401) {
    const next = `${location.pathname}${location.search}`;
    return <Navigate to={`/login${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`} replace />;
  }
  if (me.error) {
    return (
      <div className="p-8">
        <ErrorState error={me.error} onRetry={() => void me.refetch()} />
      </div>
    );
  }
  return <Outlet />;
}
