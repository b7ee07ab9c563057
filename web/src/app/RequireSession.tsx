import { Navigate, Outlet, useLocation } from 'react-router';
import { ApiError } from '@/api/client';
import { FrameState } from './FrameState';
import { useMe } from './session';

/** Signed-in pages: without a session, to the sign-in page and back here afterwards. */
export function RequireSession() {
  const me = useMe();
  const location = useLocation();
  if (me.error instanceof ApiError && me.error.status === 401) {
    const next = `${location.pathname}${location.search}`;
    return <Navigate to={`/login${next === '/' ? '' : `?next=${encodeURIComponent(next)}`}`} replace />;
  }
  if (me.isPending || me.error) return <FrameState query={me} />;
  return <Outlet />;
}
