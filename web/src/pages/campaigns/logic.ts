/**
 * Pure rules of the campaign pages (no imports): which actions a state allows, when to poll,
 * the funnel and progress from GET /campaigns/:id/stats, schedule times between the
 * datetime-local input and the API's ISO 8601. Unit-tested in test/web/campaigns-logic.test.ts.
 */

export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const isCampaignStatus = (v: string | undefined): v is CampaignStatus => (CAMPAIGN_STATUSES as readonly string[]).includes(v ?? '');

/** Status colours only for status (UI.md): grey draft, amber scheduled/sending, green sent, red cancelled. */
export function statusTone(s: CampaignStatus): 'neutral' | 'warn' | 'accent' | 'ok' | 'bad' {
  switch (s) {
    case 'DRAFT':
      return 'neutral';
    case 'SCHEDULED':
      return 'warn';
    case 'SENDING':
      return 'accent';
    case 'SENT':
      return 'ok';
    case 'CANCELLED':
      return 'bad';
  }
}

export const statusLabel = (s: CampaignStatus): string => s.charAt(0) + s.slice(1).toLowerCase();

/** What each state allows (docs/campaigns.md: PUT only DRAFT/SCHEDULED, send only DRAFT, cancel SCHEDULED/SENDING, delete not while active). */
export function allowedActions(s: CampaignStatus): { edit: boolean; send: boolean; cancel: boolean; remove: boolean } {
  return {
    edit: s === 'DRAFT' || s === 'SCHEDULED',
    send: s === 'DRAFT',
    cancel: s === 'SCHEDULED' || s === 'SENDING',
    remove: s !== 'SCHEDULED' && s !== 'SENDING',
  };
}

/**
 * How often a campaign page refreshes: every second while SENDING; every second around a
 * schedule that is due (within 5 s or past), so the start shows; otherwise not at all.
 */
export function pollInterval(c: { status: string; scheduledFor: string | null } | undefined, now: number): number | false {
  if (!c) return false;
  if (c.status === 'SENDING') return 1000;
  if (c.status === 'SCHEDULED' && c.scheduledFor && Date.parse(c.scheduledFor) - now <= 5000) return 1000;
  return false;
}

export interface Stats {
  total: number;
  pending: number;
  sent: number;
  unconfirmed: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
  failed: number;
  cancelled: number;
}

/** Sent of total while sending: everything no longer PENDING/SENDING counts as processed. */
export function progress(s: Pick<Stats, 'total' | 'pending'>): { processed: number; total: number; percent: number } {
  const processed = Math.max(0, s.total - s.pending);
  return { processed, total: s.total, percent: s.total > 0 ? Math.min(100, Math.round((processed / s.total) * 1000) / 10) : 0 };
}

export interface FunnelStep {
  key: 'sent' | 'delivered' | 'opened' | 'clicked';
  label: string;
  value: number;
  /** Share of sent (0..1); 1 for sent itself when anything was sent. */
  ofSent: number;
  /** Share of the previous step (0..1). */
  ofPrevious: number;
}

/** sent → delivered → opened → clicked, each a share of sent and of the step before. */
export function funnel(s: Pick<Stats, 'sent' | 'delivered' | 'opened' | 'clicked'>): FunnelStep[] {
  const steps: [FunnelStep['key'], string][] = [
    ['sent', 'Sent'],
    ['delivered', 'Delivered'],
    ['opened', 'Opened'],
    ['clicked', 'Clicked'],
  ];
  let previous = s.sent;
  return steps.map(([key, label]) => {
    const value = s[key];
    const step = { key, label, value, ofSent: s.sent > 0 ? value / s.sent : 0, ofPrevious: previous > 0 ? value / previous : 0 };
    // No delivered at all: the relay sends no delivery notifications, so opens are a share of sent.
    if (key !== 'delivered' || value > 0) previous = value;
    return step;
  });
}

/** A fraction of two counters, 0 when the denominator is 0. */
export const rate = (n: number, of: number): number => (of > 0 ? n / of : 0);

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * A datetime-local value ("2026-12-01T09:30") read in the user's zone as an ISO 8601 instant
 * with Z. `offsetMinutes` is Date#getTimezoneOffset() of that local time (UTC − local, in minutes).
 * undefined for anything that is not a complete, real local date-time.
 */
export function localInputToIso(value: string, offsetMinutes: number): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(value);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = m.slice(1).map(Number) as [number, number, number, number, number];
  const utc = Date.UTC(y, mo - 1, d, h, mi);
  const check = new Date(utc);
  if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d || h > 23 || mi > 59) return undefined;
  return new Date(utc + offsetMinutes * 60_000).toISOString();
}

/** The datetime-local value of an instant in a zone of the given offset (the inverse of localInputToIso). */
export function isoToLocalInput(iso: string, offsetMinutes: number): string {
  const t = new Date(Date.parse(iso) - offsetMinutes * 60_000);
  return `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}T${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}`;
}

/** Who receives a campaign, in words, for the list and the confirmation. */
export function audienceSummary(c: { audienceType: 'ALL' | 'SEGMENT' | 'FILTERED'; type: string }, segmentName?: string): string {
  const who = c.audienceType === 'ALL' ? 'All contacts' : c.audienceType === 'SEGMENT' ? `Segment “${segmentName ?? 'unknown'}”` : 'Contacts matching a condition';
  return c.type === 'MARKETING' ? `${who} (subscribed only)` : who;
}
