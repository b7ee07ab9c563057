import { useEffect, useRef } from 'react';
import { useBlocker } from 'react-router';
import { ConfirmDialog } from '@/components/ui/dialog';

/**
 * Asks before leaving an editor with unsaved changes: a confirmation for links inside the app,
 * the browser's own prompt for closing or reloading the tab. `allow()` lets the editor's own
 * navigation through (after a save, a send).
 */
export function useLeaveGuard(dirty: boolean, what: string) {
  const bypass = useRef(false);
  const blocker = useBlocker(({ currentLocation, nextLocation }) => dirty && !bypass.current && currentLocation.pathname !== nextLocation.pathname);
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);
  const dialog = (
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
  return {
    allow: () => {
      bypass.current = true;
    },
    dialog,
  };
}
