import { useQueries, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, unwrap } from '@/api/client';
import { Button } from '@/components/ui/button';
import { useToast } from '@/components/toast';
import { formatNumber } from '@/lib/format';
import { chunk } from './logic';
import { isRunning, JobErrors, type JobStatus, ProgressBar } from './parts';

export type BulkAction = 'subscribe' | 'unsubscribe' | 'delete';

export const BULK_PATH = {
  subscribe: '/contacts/bulk-subscribe',
  unsubscribe: '/contacts/bulk-unsubscribe',
  delete: '/contacts/bulk-delete',
} as const;

const PAST = { subscribe: 'subscribed', unsubscribe: 'unsubscribed', delete: 'deleted' } as const;

export interface ListFilters {
  search?: string | undefined;
  subscribed?: 'true' | 'false' | undefined;
}

/**
 * The ids of every contact matching the filters, page by page (100 per request, keyset order):
 * the bulk endpoints take ids, so "select all N matching" is resolved here.
 */
export async function collectIds(filters: ListFilters, onProgress: (n: number) => void, signal: AbortSignal): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await patiently(() => api.GET('/contacts', { params: { query: { limit: 100, ...filters, ...(cursor ? { cursor } : {}) } }, signal }), signal);
    for (const c of page.data) ids.push(c.id);
    onProgress(ids.length);
    if (!page.hasMore || !page.cursor) return ids;
    cursor = page.cursor;
  }
}

/** Starts one job per 1,000 ids; answers the job ids. */
export async function startBulk(action: BulkAction, ids: string[], signal: AbortSignal): Promise<string[]> {
  const jobs: string[] = [];
  for (const part of chunk(ids)) {
    const r = await patiently(() => api.POST(BULK_PATH[action], { body: { contactIds: part }, signal }), signal);
    jobs.push(r.jobId);
  }
  return jobs;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      reject(new Error('Cancelled'));
    });
  });

/**
 * A call that waits out the project's rate limit (429: Retry-After seconds, then again): walking
 * a large set for "all matching" takes one request per 100 contacts.
 */
async function patiently<T>(call: () => Promise<{ data?: T; error?: unknown; response: Response }>, signal: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    if (signal.aborted) throw new Error('Cancelled');
    const answer = await call();
    if (answer.response.status !== 429 || attempt >= 10) return unwrap(Promise.resolve(answer));
    const wait = Number(answer.response.headers.get('retry-after'));
    await sleep((Number.isFinite(wait) && wait > 0 ? wait : 5) * 1000, signal);
  }
}

/** Follows bulk jobs (GET /contacts/bulk/{jobId} every second while they run), then a toast. */
export function BulkProgress({ action, jobIds, total, onClose }: { action: BulkAction; jobIds: string[]; total: number; onClose: () => void }) {
  const queryClient = useQueryClient();
  const notify = useToast();
  const notified = useRef(false);
  // Jobs run one after the other (same queue priority): poll the first few unfinished ones only.
  const [polled, setPolled] = useState(3);
  const jobs = useQueries({
    queries: jobIds.map((jobId, index) => ({
      queryKey: ['contacts', 'bulk-job', jobId],
      enabled: index < polled,
      queryFn: () => unwrap(api.GET('/contacts/bulk/{jobId}', { params: { path: { jobId } } })) as Promise<JobStatus>,
      refetchInterval: (q: { state: { data?: JobStatus } }) => (isRunning(q.state.data) ? 1000 : false),
    })),
  });
  const statuses = jobs.map((j) => j.data);
  const firstUnfinished = statuses.findIndex((j) => isRunning(j));
  const wanted = firstUnfinished === -1 ? jobIds.length : firstUnfinished + 3;
  if (wanted > polled) setPolled(wanted);
  const processed = statuses.reduce((s, j) => s + (j?.processed ?? 0), 0);
  const failed = statuses.reduce((s, j) => s + (j?.failed ?? 0), 0);
  const finished = statuses.every((j) => j && !isRunning(j));
  const anyFailed = statuses.some((j) => j?.status === 'FAILED');
  const errorMessage = jobs.find((j) => j.isError)?.error?.message;

  useEffect(() => {
    if (!finished || notified.current) return;
    notified.current = true;
    void queryClient.invalidateQueries({ queryKey: ['contacts', 'list'] });
    void queryClient.invalidateQueries({ queryKey: ['contacts', 'count'] });
    notify({
      title: anyFailed ? `Bulk ${action} failed` : `${formatNumber(processed)} ${processed === 1 ? 'contact' : 'contacts'} ${PAST[action]}`,
      description: failed ? `${formatNumber(failed)} could not be found (deleted meanwhile).` : undefined,
      tone: anyFailed || failed ? 'bad' : 'ok',
    });
  }, [finished, anyFailed, action, processed, failed, notify, queryClient]);

  return (
    <div role="status" aria-live="polite" className="grid gap-2 rounded-md border border-border bg-surface px-4 py-3">
      <ProgressBar label={finished ? `Bulk ${action} done` : `Bulk ${action} running`} value={processed + failed} max={total} />
      {errorMessage ? <p className="text-sm text-bad">{errorMessage}</p> : null}
      {statuses.map((j) => (j ? <JobErrors key={j.id} job={j} rowLabel={(row) => `#${row + 1}`} /> : null))}
      {finished ? (
        <div>
          <Button size="sm" variant="secondary" onClick={onClose}>
            Dismiss
          </Button>
        </div>
      ) : null}
    </div>
  );
}
