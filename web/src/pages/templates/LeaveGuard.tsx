import { useEffect } from 'react';
import { useBlocker } from 'react-router';
import { ConfirmDialog } from '@/components/ui/dialog';

/** Navigation state that passes the guard: the editor's own moves after a save, a send or a delete. */
export const SKIP_LEAVE_GUARD = { skipLeaveGuard: true } as const;

const skips = (state: unknown): boolean => typeof state === 'object' && state !== null && (state as { skipLeaveGuard?: unknown }).skipLeaveGuard === true;

/**
 * Asks before leaving an editor with unsaved changes: a confirmation for links inside the app,
 * the browser's own prompt for closing or reloading the tab. Navigations with
 * {@link SKIP_LEAVE_GUARD} in their state go through.
 */
export function useLeaveGuard(dirty: boolean, what: string) {
  const blocker = useBlocker(({ currentLocation, nextLocation }) => dirty && currentLocation.pathname !== nextLocation.pathname && !skips(nextLocation.state));
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);
  return (
    <ConfirmDialog
      open={blocker.state === 'blocked'}
      onOpenChange={(open) => {
        if (!open) blocker.reset?.();
      }}
      title="Leave without saving?"
      description={`Your unsaved changes to this ${what} are lost.`}
      confirmLabel="Leave without saving"
      onConfirm={() => blocker.proceed?.()}
    />
  );
}
