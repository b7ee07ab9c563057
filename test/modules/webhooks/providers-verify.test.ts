import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkMailgun, createReplayMemory, TOLERANCE_SECONDS } from '../../../src/modules/webhooks/providers/verify.js';
import { parseSendgrid } from '../../../src/modules/webhooks/providers/sendgrid.js';

describe('the replay memory', () => {
  it('keeps at most `max` keys, the oldest going first, each for its time to live', () => {
    const memory = createReplayMemory(3, 1_000);
    for (const key of ['a', 'b', 'c', 'd', 'e']) memory.add(key, 0);
    expect(['a', 'b', 'c', 'd', 'e'].map((k) => memory.has(k, 10))).toEqual([false, false, true, true, true]);
    expect(memory.has('e', 1_001)).toBe(false);
    // An expired key is dropped when the next one is added.
    memory.add('f', 2_000);
    expect(['c', 'd', 'e', 'f'].map((k) => memory.has(k, 2_000))).toEqual([false, false, false, true]);
  });
});

describe('timestamps', () => {
  const sign = (timestamp: string) => ({ timestamp, token: 't'.repeat(50), signature: createHmac('sha256', 'k').update(`${timestamp}${'t'.repeat(50)}`).digest('hex') });
  it('refuses a signed timestamp too far in the past or the future, takes one within the tolerance', () => {
    const now = 1_800_000_000_000;
    const at = (offset: number) => String(now / 1000 + offset);
    expect(checkMailgun(sign(at(-TOLERANCE_SECONDS + 5)), 'k', now)).toBeUndefined();
    expect(checkMailgun(sign(at(TOLERANCE_SECONDS - 5)), 'k', now)).toBeUndefined();
    expect(checkMailgun(sign(at(-TOLERANCE_SECONDS - 5)), 'k', now)).toMatch(/timestamp/);
    expect(checkMailgun(sign(at(TOLERANCE_SECONDS + 5)), 'k', now)).toMatch(/timestamp/);
    expect(checkMailgun(sign('soon'), 'k', now)).toMatch(/timestamp/);
  });
});

describe('SendGrid dropped events', () => {
  it('treat only bounced or invalid addresses as hard bounces, spam-reporting ones as complaints', () => {
    const drop = (reason: string) => parseSendgrid([{ event: 'dropped', sg_event_id: 'e1', 'smtp-id': '<a@b>', reason }])[0];
    expect(drop('Bounced Address')).toMatchObject({ kind: 'bounce', permanent: true, reportKey: 'sendgrid:e1' });
    expect(drop('Invalid')).toMatchObject({ kind: 'bounce', permanent: true });
    expect(drop('Spam Reporting Address')).toMatchObject({ kind: 'complaint' });
    expect(drop('Unsubscribed Address')).toMatchObject({ ignored: expect.stringMatching(/not a delivery failure/) });
    expect(parseSendgrid({ not: 'an array' })).toEqual([{ ignored: 'SendGrid body is not an array of events' }]);
  });
});
