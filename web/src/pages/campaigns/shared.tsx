import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError, api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
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

export interface RecipientEstimate {
  count: number | undefined;
  /** How the number was found, for the sentence beside it. */
  note: string;
  pending: boolean;
}

/**
 * Who would receive the campaign now. The API has no count endpoint for a campaign's audience
 * before it is sent, so: ALL → the contacts total of GET /contacts (subscribed=true for
 * marketing), SEGMENT → the segment's cached member count. Suppressed addresses are counted and
 * then skipped at send (docs/campaigns.md), and the recipients are fixed when sending starts.
 */
export function useRecipientEstimate(a: { audienceType: Campaign['audienceType']; segmentId: string | null; type: Campaign['type'] }): RecipientEstimate {
  const marketing = a.type === 'MARKETING';
  const all = useQuery({
    queryKey: ['contacts', 'count', marketing],
    queryFn: () => unwrap(api.GET('/contacts', { params: { query: { limit: 1, ...(marketing ? { subscribed: 'true' as const } : {}) } } })),
    enabled: a.audienceType === 'ALL',
  });
  const segments = useSegments();
  if (a.audienceType === 'ALL') return { count: all.data?.total, note: marketing ? 'subscribed contacts' : 'contacts', pending: all.isPending };
  if (a.audienceType === 'SEGMENT') {
    const s = segments.data?.find((x) => x.id === a.segmentId);
    return { count: s?.memberCount, note: marketing ? 'segment members (unsubscribed ones are skipped)' : 'segment members', pending: segments.isPending };
  }
  return { count: undefined, note: 'matching contacts, counted when sending starts', pending: false };
}

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
  campaign: Pick<Campaign, 'name' | 'audienceType' | 'segmentId' | 'type' | 'subject'>;
  segmentName?: string | undefined;
  prepare: () => Promise<string>;
  onSent: (id: string, status: string) => void;
}) {
  const qc = useQueryClient();
  const toast = useToast();
  const [mode, setMode] = useState<'now' | 'later'>('now');
  const [when, setWhen] = useState('');
  const estimate = useRecipientEstimate(campaign);
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
  const count = estimate.count;
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
              : <strong data-testid="recipient-count">{formatNumber(count)}</strong> {estimate.note}
            </>
          ) : estimate.pending ? (
            ': counting…'
          ) : (
            ` (${estimate.note})`
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
