import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjectThrottle } from '../../../src/modules/emails/delivery/throttle.js';
import { newProject } from '../../helpers/accounts.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

describe('createProjectThrottle (shared, in PostgreSQL)', () => {
  let t: SendTestApp;
  beforeAll(async () => {
    t = await createSendTestApp();
  });
  afterAll(() => t?.close());

  it('lets one second of emails through at once, then spaces them at the rate, per project', async () => {
    const throttle = createProjectThrottle(t.db.db, {});
    const [p, other] = [(await newProject(t.app)).project.id, (await newProject(t.app)).project.id];
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) waits.push(await throttle.reserve(p, 4));
    expect(waits.slice(0, 4)).toEqual([0, 0, 0, 0]);
    // 250 ms apart after the burst (less the few ms the statements took).
    for (const [i, w] of waits.slice(4).entries()) expect(w).toBeGreaterThan(250 * (i + 1) - 100);
    expect(waits[6]).toBeLessThanOrEqual(750);
    expect(await throttle.reserve(other, 4)).toBe(0);
    expect(await throttle.reserve(p, null)).toBe(0); // no rate, no default: unlimited
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
