import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjectThrottle } from '../../../src/modules/emails/delivery/throttle.js';
import { newProject } from '../../helpers/accounts.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

describe('createProjectThrottle', () => {
  it('lets one second of emails through at once, then spaces them at the rate, per project', () => {
    const throttle = createProjectThrottle(4);
    const now = 1_000_000;
    expect([1, 2, 3, 4].map(() => throttle.reserve('p', now))).toEqual([0, 0, 0, 0]);
    expect([5, 6, 7].map(() => throttle.reserve('p', now))).toEqual([250, 500, 750]);
    expect(throttle.reserve('other', now)).toBe(0);
    // Two seconds later the bucket has refilled.
    expect(throttle.reserve('p', now + 2750)).toBe(0);
  });
});

describe('per-project sending rate (SMTP_URL ?projectRate=)', () => {
  let sink: SmtpSink;
  let t: SendTestApp;
  beforeAll(async () => {
    sink = await startSmtpSink({ keepRaw: false });
    t = await createSendTestApp({ env: { SMTP_URL: `${sink.url}?projectRate=2` } });
    await t.startWorker({ concurrency: 4 });
  });
  afterAll(async () => {
    await t?.close();
    await sink?.close();
  });

  it('throttles a project over its rate instead of refusing: every email is delivered once, spread over time; other projects are not held up', async () => {
    const busy = await newProject(t.app);
    const busyFrom = `a@${(await addVerifiedDomain(t, busy.project.id)).domain}`;
    const quiet = await newProject(t.app);
    const quietFrom = `a@${(await addVerifiedDomain(t, quiet.project.id)).domain}`;

    const res = await send(t.app, busy.project, { to: Array.from({ length: 6 }, (_, i) => `b${i}@example.com`), from: busyFrom, subject: 's', body: 'b' });
    expect(res.statusCode, res.body).toBe(200);
    const ids = res.json<SendAnswer>().data.emails.map((e) => e.email);
    const other = await send(t.app, quiet.project, { to: 'q@example.com', from: quietFrom, subject: 's', body: 'b' });
    const [quietRow] = await waitForStatus(t.db, other.json<SendAnswer>().data.emails.map((e) => e.email), ['SENT']);

    const rows = await waitForStatus(t.db, ids, ['SENT'], 20_000);
    const times = rows.map((r) => r.sent_at?.getTime() ?? 0).sort((a, b) => a - b);
    // 2 at once, then one every 500 ms: the sixth is reserved 2 s after the first, which is
    // sent_at minus its own delivery time (tens of ms; 1 s left for a loaded machine). Unthrottled,
    // all six would leave within a few hundred ms at most.
    expect((times.at(-1) ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(1000);
    // Not held up: the other project's email, queued after all six, went before the busy
    // project's last one, which its throttle keeps for 2 s (a clock of the throttle itself, not
    // of how fast a loaded machine runs). Sharing the busy project's bucket, it would go after.
    expect(quietRow?.sent_at?.getTime() ?? Infinity).toBeLessThan(times.at(-1) ?? 0);
    expect(rows.every((r) => r.attempts === 1)).toBe(true);
    expect(sink.messages.filter((m) => m.to[0]?.startsWith('b'))).toHaveLength(6);
    expect(new Set(sink.messages.map((m) => m.messageId)).size).toBe(sink.messages.length);
  });
});
