import type { ReactNode } from 'react';
import { ApiError } from '@/api/client';
import { Button } from './ui/button';

/** Every page's header: title, one-line description, the primary action on the right. */
export function PageHeader({ title, description, actions }: { title: string; description?: ReactNode; actions?: ReactNode }) {
  return (
    <header className="mb-6 flex flex-wrap items-start justify-between gap-4">
      <div>
        <h1 className="text-xl font-semibold">{title}</h1>
        {description ? <div className="mt-1 text-fg-muted">{description}</div> : null}
      </div>
      {actions ? <div className="flex items-center gap-2">{actions}</div> : null}
    </header>
  );
}

/** What a feature is, in one sentence, and its first action. */
export function EmptyState({ title, description, action }: { title: string; description: string; action?: ReactNode }) {
  return (
    <div className="flex flex-col items-center gap-2 rounded-md border border-dashed border-border px-6 py-12 text-center">
      <p className="font-medium">{title}</p>
      <p className="max-w-md text-fg-muted">{description}</p>
      {action ? <div className="mt-2">{action}</div> : null}
    </div>
  );
}

/** A failed load: the message, the requestId of a server error (to report it), and a retry. */
export function ErrorState({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const api = error instanceof ApiError ? error : undefined;
  return (
    <div role="alert" className="flex flex-col items-start gap-2 rounded-md border border-bad/40 bg-bad/5 px-4 py-3">
      <p className="font-medium text-bad">{api?.message ?? (error instanceof Error ? error.message : 'Something went wrong')}</p>
      {api?.suggestion ? <p className="text-fg-muted">{api.suggestion}</p> : null}
      {api && api.status >= 500 && api.requestId ? (
        <p className="text-xs text-fg-muted">
          Request id <code className="select-all">{api.requestId}</code> (quote it when reporting the problem)
        </p>
      ) : null}
      {onRetry ? (
        <Button size="sm" variant="secondary" onClick={onRetry}>
          Try again
        </Button>
      ) : null}
    </div>
  );
}
