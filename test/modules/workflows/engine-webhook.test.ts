import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject } from '../../helpers/accounts.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { createWorkflow, stepsOf, track, waitForExecutions } from './engine-helpers.js';
import { type Receiver, startReceiver, verifyWebhook } from './webhook-receiver.js';

let t: SendTestApp;
let rx: Receiver;
beforeAll(async () => {
  t = await createSendTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  await t.runWorker();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
});

describe('WEBHOOK step', () => {
  it('calls outside the transaction, signed with the project secret, X-Webhook-Id = the step execution id on every attempt; 2xx completes, 4xx fails the execution', async () => {
    const { project: p } = await newProject(t.app);
    const wf = await createWorkflow(t.db, p.id, {
      eventName: 'hook',
      allowReentry: true,
      steps: [{ key: 'call', type: 'WEBHOOK', config: { url: `${rx.url}/in/{{event.orderId}}` } }],
      edges: [['trigger', 'call']],
    });
    rx.answers = [{ status: 503 }, { status: 200, body: 'thanks' }, { status: 404, body: 'no such order' }];
    await track(t.app, p, { email: 'h@x.example', event: 'hook', data: { orderId: 'o-7' } });
    const [ok] = await waitForExecutions(t.db, wf.id, 1, ['COMPLETED']);
    const [call] = (await stepsOf(t.db, ok?.id ?? '')).slice(1);
    expect(call).toMatchObject({ status: 'COMPLETED', attempts: 1, output: { status: 200, bodyExcerpt: 'thanks', calls: 2 } });
    expect(rx.received).toHaveLength(2);
    expect(rx.received.map((r) => r.headers['x-webhook-id'])).toEqual([call?.id, call?.id]);
    expect(rx.received[0]?.url).toBe('/in/o-7');
    const { webhook_secret: secret } = await t.db.db.selectFrom('projects').select('webhook_secret').where('id', '=', p.id).executeTakeFirstOrThrow();
    const last = rx.received[1];
    expect(verifyWebhook(secret, String(last?.headers['x-signature']), last?.body ?? '')).toBe(true);
    expect(JSON.parse(last?.body ?? '{}')).toMatchObject({ contact: { email: 'h@x.example' }, event: { orderId: 'o-7' }, execution: { id: ok?.id } });

    await track(t.app, p, { email: 'h@x.example', event: 'hook', data: { orderId: 'o-8' } });
    const rows = await waitForExecutions(t.db, wf.id, 2, ['COMPLETED', 'FAILED']);
    const failed = rows.find((r) => r.status === 'FAILED');
    expect(failed?.error).toBe('HTTP 404');
    expect((await stepsOf(t.db, failed?.id ?? ''))[1]).toMatchObject({ status: 'FAILED', error: 'HTTP 404', output: { status: 404, bodyExcerpt: 'no such order' } });
  });
});
