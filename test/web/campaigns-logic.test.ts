import { describe, expect, it } from 'vitest';
import { allowedActions, audienceSummary, funnel, isoToLocalInput, localInputToIso, pollInterval, progress, rate, statusTone } from '../../web/src/pages/campaigns/logic.js';

describe('campaign pages: state rules, polling, funnel, progress, schedule times', () => {
  it('allows what docs/campaigns.md allows in each state', () => {
    expect(allowedActions('DRAFT')).toEqual({ edit: true, send: true, cancel: false, remove: true });
    expect(allowedActions('SCHEDULED')).toEqual({ edit: true, send: false, cancel: true, remove: false });
    expect(allowedActions('SENDING')).toEqual({ edit: false, send: false, cancel: true, remove: false });
    expect(allowedActions('SENT')).toEqual({ edit: false, send: false, cancel: false, remove: true });
    expect(allowedActions('CANCELLED')).toEqual({ edit: false, send: false, cancel: false, remove: true });
    expect(statusTone('SENT')).toBe('ok');
    expect(statusTone('CANCELLED')).toBe('bad');
  });

  it('polls every second only while sending or when a schedule is due', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(pollInterval({ status: 'SENDING', scheduledFor: null }, now)).toBe(1000);
    expect(pollInterval({ status: 'SCHEDULED', scheduledFor: '2026-01-01T12:00:03Z' }, now)).toBe(1000);
    expect(pollInterval({ status: 'SCHEDULED', scheduledFor: '2026-01-01T11:00:00Z' }, now)).toBe(1000);
    expect(pollInterval({ status: 'SCHEDULED', scheduledFor: '2026-01-02T12:00:00Z' }, now)).toBe(false);
    for (const status of ['DRAFT', 'SENT', 'CANCELLED']) expect(pollInterval({ status, scheduledFor: null }, now)).toBe(false);
    expect(pollInterval(undefined, now)).toBe(false);
  });

  it('computes progress and the funnel from the stats', () => {
    expect(progress({ total: 3, pending: 2 })).toEqual({ processed: 1, total: 3, percent: 33.3 });
    expect(progress({ total: 0, pending: 0 })).toEqual({ processed: 0, total: 0, percent: 0 });
    const f = funnel({ sent: 200, delivered: 180, opened: 90, clicked: 9 });
    expect(f.map((s) => [s.key, s.value, s.ofSent, s.ofPrevious])).toEqual([
      ['sent', 200, 1, 1],
      ['delivered', 180, 0.9, 0.9],
      ['opened', 90, 0.45, 0.5],
      ['clicked', 9, 0.045, 0.1],
    ]);
    // A relay without delivery notifications: opens are a share of what was sent, not of 0 delivered.
    expect(funnel({ sent: 20, delivered: 0, opened: 5, clicked: 1 }).map((s) => s.ofPrevious)).toEqual([1, 0, 0.25, 0.2]);
    expect(funnel({ sent: 0, delivered: 0, opened: 0, clicked: 0 }).every((s) => s.ofSent === 0 && s.ofPrevious === 0)).toBe(true);
    expect(rate(1, 0)).toBe(0);
    expect(rate(1, 4)).toBe(0.25);
  });

  it('turns a local date-time into an instant and back, refusing impossible dates', () => {
    // UTC+2 (getTimezoneOffset -120): 09:30 local is 07:30Z.
    expect(localInputToIso('2026-12-01T09:30', -120)).toBe('2026-12-01T07:30:00.000Z');
    expect(localInputToIso('2026-12-01T09:30', 300)).toBe('2026-12-01T14:30:00.000Z');
    expect(isoToLocalInput('2026-12-01T07:30:00.000Z', -120)).toBe('2026-12-01T09:30');
    expect(localInputToIso('2026-02-30T10:00', 0)).toBeUndefined();
    expect(localInputToIso('2026-12-01T25:00', 0)).toBeUndefined();
    expect(localInputToIso('2026-12-01', 0)).toBeUndefined();
    expect(localInputToIso('', 0)).toBeUndefined();
  });

  it('says who receives a campaign', () => {
    expect(audienceSummary({ audienceType: 'ALL', type: 'MARKETING' })).toBe('All contacts (subscribed only)');
    expect(audienceSummary({ audienceType: 'SEGMENT', type: 'TRANSACTIONAL' }, 'VIPs')).toBe('Segment “VIPs”');
  });
});
