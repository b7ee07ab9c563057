import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useProject } from '@/app/project';
import { formatNumber } from '@/lib/format';

/** The value once it has not changed for `ms`. */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

/**
 * How many contacts the condition being edited matches now (POST /segments/count), recounted
 * 400 ms after the last change; the previous number stays, dimmed, while the next one is counted.
 * `condition` undefined: the builder has rows to fix first.
 */
type ConditionTree = components['schemas']['ConditionTree'];

export function LiveCount({ condition }: { condition: ConditionTree | undefined }) {
  const project = useProject();
  const key = useSettled(condition === undefined ? '' : JSON.stringify(condition), 400);
  const count = useQuery({
    queryKey: ['segments', project.id, 'count', key],
    queryFn: () => unwrap(api.POST('/segments/count', { body: { condition: JSON.parse(key) as ConditionTree } })),
    enabled: key !== '',
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 10_000,
  });
  let text: string;
  if (condition === undefined) text = 'Complete the conditions to count the matching contacts';
  else if (count.error) text = count.error instanceof ApiError && count.error.status === 422 ? 'Fix the highlighted conditions to count' : 'The count failed; it is tried again after the next change';
  else if (!count.data) text = 'Counting…';
  else text = `${formatNumber(count.data.count)} matching ${count.data.count === 1 ? 'contact' : 'contacts'}`;
  return (
    <span className={`text-xs tabular-nums ${count.isPlaceholderData || count.isFetching ? 'text-fg-muted/70' : 'text-fg-muted'}`} aria-live="polite" data-testid="live-count">
      {text}
    </span>
  );
}
