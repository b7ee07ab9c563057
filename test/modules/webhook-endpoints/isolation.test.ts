import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from '../emails/helpers.js';
import { type Receiver, registerEndpoint, startReceiver } from './helpers.js';

/**
 * A dead endpoint never slows sending: webhook calls run in the worker's own webhook runner
 * (src/worker.ts), so endpoints that hang until the 10-second timeout hold none of the slots that
 * deliver mail (this file's worker has 4).
 */

let sink: SmtpSink;
let r: Receiver;
let t: SendTestApp;
beforeAll(async () => {
  [sink, r] = await Promise.all([startSmtpSink(), startReceiver()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await t.runWorker();
});
afterAll(async () => {
  // Ends the hanging calls first, so the worker's stop does not wait for their timeout.
  await r?.close();
  await t?.close();
  await sink?.close();
});

describe('a hanging endpoint', () => {
  it('holds no sending slot: mail of its project and of others is delivered while its calls hang', { timeout: 60_000 }, async () => {
    const senders = await Promise.all(Array.from({ length: 5 }, () => newSender(t)));
    const paths = senders.map(() => `/hang/${randomUUID()}`);
    for (const [i, s] of senders.entries()) {
      r.answer(paths[i] ?? '', 'hang');
      await registerEndpoint(t.app, s.project, `${r.url}${paths[i]}`, ['email.sent']);
    }
    const sendOne = async (i: number) => {
      const s = senders[i % senders.length];
      if (!s) throw new Error('no sender');
      const res = await send(t.app, s.project, { to: `r${i}-${randomUUID().slice(0, 6)}@example.com`, from: s.from, subject: 'Hi', body: '<p>Hi</p>' });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<SendAnswer>().data.emails[0]?.email ?? '';
    };
    // One email per project: five endpoints' deliverers are now each waiting on a call that hangs.
    await waitForStatus(t.db, await Promise.all(senders.map((_, i) => sendOne(i))), ['SENT']);
    await until('hanging calls (at least 4)', () => paths.filter((p) => r.concurrency(p).open === 1).length >= 4, { timeoutMs: 10_000 });

    const started = Date.now();
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => sendOne(i)));
    await waitForStatus(t.db, more, ['SENT'], 8_000);
    const took = Date.now() - started;
    // Still hanging (they end at the 10-second timeout): the mail went past them.
    expect(paths.filter((p) => r.concurrency(p).open > 0).length).toBeGreaterThanOrEqual(4);
    expect(took).toBeLessThan(8_000);
  });
});
