import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import type { components, paths } from '@/api/schema';
import { useProject } from '@/app/project';
import { useMe } from '@/app/session';
import { useToast } from '@/components/toast';
import { Button } from '@/components/ui/button';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { Input } from '@/components/ui/input';
import { formatDateTime, formatNumber } from '@/lib/format';
import { audienceSummary, localInputToIso } from './logic';

export type Campaign = components['schemas']['Campaign'];
export type Segment = components['schemas']['Segment'];

export function useSegments() {
  return useQuery({ queryKey: ['segments', 'all'], queryFn: () => unwrap(api.GET('/segments')) });
}

type ConditionTree = components['schemas']['ConditionTree'];

/** The value once it has not changed for `ms` (the first value at once). */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

export interface AudienceInput {
  type: Campaign['type'];
  audienceType: Campaign['audienceType'];
  segmentId: string | null;
  /** FILTERED: the condition; undefined while the builder has rows to fix (nothing is counted). */
  audienceCondition: ConditionTree | null | undefined;
}

export interface AudienceCount {
  count: number | undefined;
  /** Why there is no number (or the count failed), in words; undefined while counting or counted. */
  hint: string | undefined;
  /** The number shown is being recounted (a previous audience's, dimmed). */
  stale: boolean;
  /** The API's 422 for this audience (its `errors[]` name the field). */
  error: ApiError | undefined;
}

/**
 * Who a send would queue now: POST /campaigns/audience-count (MARKETING: subscribed contacts
 * only, suppressed addresses excluded), recounted 400 ms after the last change; the previous
 * number stays, dimmed, while the next one is counted. The composer's card and the send
 * confirmation share the query (same key), so they show the same number.
 */
export function useAudienceCount(a: AudienceInput, active = true): AudienceCount {
  const project = useProject();
  const ready = a.audienceType === 'ALL' || (a.audienceType === 'SEGMENT' && Boolean(a.segmentId)) || (a.audienceType === 'FILTERED' && Boolean(a.audienceCondition));
  const body = ready
    ? {
        type: a.type,
        audienceType: a.audienceType,
        ...(a.audienceType === 'SEGMENT' ? { segmentId: a.segmentId } : {}),
        ...(a.audienceType === 'FILTERED' && a.audienceCondition ? { audienceCondition: a.audienceCondition } : {}),
      }
    : undefined;
  const key = useSettled(body ? JSON.stringify(body) : '', 400);
  const q = useQuery({
    queryKey: ['campaigns', project.id, 'audience-count', key],
    queryFn: () => unwrap(api.POST('/campaigns/audience-count', { body: JSON.parse(key) as AudienceBody })),
    enabled: active && key !== '',
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: 5_000,
  });
  const error = q.error instanceof ApiError && q.error.status === 422 ? q.error : undefined;
  if (!body) {
    const hint = a.audienceType === 'SEGMENT' ? 'Choose a segment to count its recipients' : 'Complete the conditions to count the recipients';
    return { count: undefined, hint, stale: false, error: undefined };
  }
  if (q.error && !q.isFetching) {
    const hint = error
      ? (error.fieldMessage('segmentId') ?? (a.audienceType === 'FILTERED' ? 'Fix the highlighted conditions to count' : error.message))
      : 'The count failed; it is tried again after the next change';
    return { count: undefined, hint, stale: false, error };
  }
  return { count: q.data?.count, hint: undefined, stale: q.isPlaceholderData || q.isFetching || key !== JSON.stringify(body), error: undefined };
}

type AudienceBody = paths['/campaigns/audience-count']['post']['requestBody']['content']['application/json'];

/** "recipient(s)", with what a marketing count leaves out. */
export const recipientsNote = (n: number, type: Campaign['type']): string =>
  `${n === 1 ? 'recipient' : 'recipients'}${type === 'MARKETING' ? ' (subscribed, not suppressed)' : ' (not suppressed)'}`;

/**
 * Send now or schedule, after a confirmation that says who and how many. `prepare` saves the
 * composer's changes first (and returns the campaign id); the send is POST /campaigns/:id/send.
 */
export function SendDialog({
  open,
  onOpenChange,
  campaign,
  segmentName,
  prepare,
  onSent,
}: {
  open: boolean;
  onOpenChange: (o: boolean) => void;
  campaign: Pick<Campaign, 'name' | 'audienceType' | 'segmentId' | 'audienceCondition' | 'type' | 'subject'>;
  segmentName?: string | undefined;
  prepare: () => Promise<string>;
  onSent: (id: string, status: string) => void;
}) {
  const qc = useQueryClient();
  const toast = useToast();
  const [mode, setMode] = useState<'now' | 'later'>('now');
  const [when, setWhen] = useState('');
  // Counted only while the dialog is open (the campaign page keeps it mounted).
  const audience = useAudienceCount(campaign, open);
  const scheduledFor = mode === 'later' && when ? localInputToIso(when, new Date(when).getTimezoneOffset()) : undefined;
  const send = useMutation({
    mutationFn: async () => {
      const id = await prepare();
      const res = await unwrap(api.POST('/campaigns/{id}/send', { params: { path: { id } }, body: mode === 'later' ? { scheduledFor } : {} }));
      return res.data;
    },
    onSuccess: (d) => {
      void qc.invalidateQueries({ queryKey: ['campaigns'] });
      toast({ title: d.status === 'SCHEDULED' ? `Scheduled for ${formatDateTime(d.scheduledFor ?? '')}` : 'Sending started' });
      onOpenChange(false);
      onSent(d.id, d.status);
    },
  });
  // A number still being recounted is not offered as the send's size.
  const count = audience.stale ? undefined : audience.count;
  const invalidWhen = mode === 'later' && !scheduledFor;
  return (
    <Dialog
      open={open}
      onOpenChange={onOpenChange}
      title={mode === 'now' ? 'Send this campaign now?' : 'Schedule this campaign?'}
      description={
        <>
          “{campaign.subject || campaign.name || 'Untitled campaign'}” goes to <strong>{audienceSummary(campaign, segmentName)}</strong>
          {count !== undefined ? (
            <>
              : <strong data-testid="recipient-count">{formatNumber(count)}</strong> {recipientsNote(count, campaign.type)} now
            </>
          ) : audience.hint ? (
            ` (${audience.hint})`
          ) : (
            ': counting…'
          )}
          . Sent emails cannot be recalled.
        </>
      }
      footer={
        <>
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button disabled={send.isPending || invalidWhen} onClick={() => send.mutate()}>
            {send.isPending ? 'Sending…' : mode === 'now' ? `Send to ${count !== undefined ? formatNumber(count) : 'audience'}` : 'Schedule'}
          </Button>
        </>
      }
    >
      <fieldset className="grid gap-2">
        <legend className="sr-only">When</legend>
        <label className="flex items-center gap-2 text-sm">
          <input type="radio" name="send-when" checked={mode === 'now'} onChange={() => setMode('now')} /> Send now
        </label>
        <label className="flex items-center gap-2 text-sm">
          <input type="radio" name="send-when" checked={mode === 'later'} onChange={() => setMode('later')} /> Schedule for later
        </label>
        {mode === 'later' ? (
          <Field label={`Send at (your time, ${Intl.DateTimeFormat().resolvedOptions().timeZone})`} error={when && invalidWhen ? 'Not a valid date and time' : undefined}>
            <Input type="datetime-local" value={when} onChange={(e) => setWhen(e.target.value)} />
          </Field>
        ) : null}
      </fieldset>
      {send.error ? (
        <p role="alert" className="text-sm text-bad">
          {send.error.message}
          {send.error instanceof ApiError && send.error.suggestion ? ` ${send.error.suggestion}` : ''}
        </p>
      ) : null}
    </Dialog>
  );
}

/** One test email to an address (POST /campaigns/:id/test), rendered with that contact's data when there is one. */
export function TestSendDialog({ open, onOpenChange, prepare }: { open: boolean; onOpenChange: (o: boolean) => void; prepare: () => Promise<string> }) {
  const me = useMe();
  const toast = useToast();
  const [email, setEmail] = useState<string>();
  const value = email ?? me.data?.email ?? '';
  const test = useMutation({
    mutationFn: async () => {
      const id = await prepare();
      return unwrap(api.POST('/campaigns/{id}/test', { params: { path: { id } }, body: { email: value.trim() } }));
    },
    onSuccess: (r) => {
      toast({ title: `Test email sent to ${r.data.email}` });
      onOpenChange(false);
    },
  });
  const err = test.error instanceof ApiError ? test.error : undefined;
  return (
    <Dialog
      open={open}
      onOpenChange={onOpenChange}
      title="Send a test email"
      description="One email to this address, filled with the data of the contact with that address if there is one. It does not count in the campaign's stats."
      footer={
        <>
          <Button variant="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </Button>
          <Button disabled={test.isPending || !value.trim()} onClick={() => test.mutate()}>
            {test.isPending ? 'Sending…' : 'Send test'}
          </Button>
        </>
      }
    >
      <Field label="Send to" error={err?.fieldMessage('email') ?? (test.error && !err?.fieldMessage('email') ? test.error.message : undefined)}>
        <Input type="email" value={value} onChange={(e) => setEmail(e.target.value)} />
      </Field>
    </Dialog>
  );
}
