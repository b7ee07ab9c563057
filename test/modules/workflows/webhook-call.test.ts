import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callWebhook, type WebhookDeps, type WebhookInput } from '../../../src/modules/workflows/webhook/call.js';
import { type Receiver, SECRET, startReceiver, variables, verifyWebhook } from './webhook-receiver.js';

let r: Receiver;
beforeAll(async () => {
  r = await startReceiver();
});
afterAll(() => r.close());
beforeEach(() => {
  r.received.length = 0;
  r.answers = [];
});

const deps: WebhookDeps = { retryDelaysMs: [10, 10], timeoutMs: 2_000 };
const input = (over: Partial<WebhookInput> = {}): WebhookInput => ({
  url: `${r.url}/hook`,
  variables: variables(),
  secret: SECRET,
  webhookId: '0190c0de-0000-7000-8000-00000000abcd',
  allowPrivate: true,
  ...over,
});

describe('callWebhook: the request', () => {
  it('POSTs the default body as JSON, signed so that the documented receiver check passes', async () => {
    const result = await callWebhook(deps, input());
    expect(result).toMatchObject({ ok: true, status: 200, bodyExcerpt: 'ok', error: null, attempts: 1, method: 'POST', url: `${r.url}/hook` });
    const [req] = r.received;
    if (!req) throw new Error('no request');
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['x-webhook-id']).toBe('0190c0de-0000-7000-8000-00000000abcd');
    expect(req.headers['user-agent']).toMatch(/^mailplatform-webhooks\//);
    expect(JSON.parse(req.body)).toEqual({
      workflow: { id: '0190c0de-0000-7000-8000-0000000000aa', name: 'Onboarding' },
      execution: { id: '0190c0de-0000-7000-8000-0000000000ee', startedAt: '2025-01-02T03:04:05.678Z' },
      contact: { id: '0190c0de-0000-7000-8000-000000000001', email: 'ada@example.com', subscribed: true, data: { plan: 'pro', name: 'Ada' } },
      event: { orderId: 'o-1' },
      context: { source: 'test' },
    });
    const signature = String(req.headers['x-signature']);
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(SECRET, signature, req.body)).toBe(true);
    // The check is not vacuous: another secret, another body or an old timestamp fail it.
    expect(verifyWebhook(`whsec_${'cd'.repeat(32)}`, signature, req.body)).toBe(false);
    expect(verifyWebhook(SECRET, signature, `${req.body} `)).toBe(false);
    expect(verifyWebhook(SECRET, signature, req.body, Date.now() + 6 * 60_000)).toBe(false);
  });

  it('sends GET and DELETE without a body, signing the empty string', async () => {
    for (const method of ['GET', 'DELETE'] as const) {
      r.received.length = 0;
      const result = await callWebhook(deps, input({ method, body: { ignored: true } }));
      expect(result.ok).toBe(true);
      const req = r.received[0];
      expect(req?.method).toBe(method);
      expect(req?.body).toBe('');
      expect(req?.headers['content-type']).toBeUndefined();
      expect(verifyWebhook(SECRET, String(req?.headers['x-signature']), '')).toBe(true);
    }
  });

  it('keeps its own X-Signature, X-Webhook-Id and User-Agent over the step headers', async () => {
    await callWebhook(deps, input({ headers: { 'x-signature': 'forged', 'X-Webhook-Id': 'other', 'User-Agent': 'me', 'X-Extra': 'kept' } }));
    const req = r.received[0];
    expect(req?.headers['x-webhook-id']).toBe('0190c0de-0000-7000-8000-00000000abcd');
    expect(req?.headers['x-extra']).toBe('kept');
    expect(verifyWebhook(SECRET, String(req?.headers['x-signature']), req?.body ?? '')).toBe(true);
  });

  it('answers a config that cannot become a request with a failure and no attempt', async () => {
    expect(await callWebhook(deps, input({ method: 'TRACE' }))).toMatchObject({ ok: false, attempts: 0, error: expect.stringMatching(/method TRACE/) });
    expect(await callWebhook(deps, input({ url: 'ftp://example.com/x' }))).toMatchObject({ ok: false, attempts: 0, error: expect.stringMatching(/http and https/) });
    expect(await callWebhook(deps, input({ url: '{{context.source}}' }))).toMatchObject({ ok: false, attempts: 0 });
    expect(await callWebhook(deps, input({ body: '{"a": {{contact.email}}}' }))).toMatchObject({ ok: false, attempts: 0, error: expect.stringMatching(/JSON/) });
    expect(r.received).toHaveLength(0);
  });

  it('never returns the URL credentials in the result, but sends them as Basic auth', async () => {
    const result = await callWebhook(deps, input({ url: `http://user:p%40ss@127.0.0.1:${r.port}/hook` }));
    expect(result.url).toBe(`${r.url}/hook`);
    expect(r.received[0]?.headers.authorization).toBe(`Basic ${Buffer.from('user:p@ss').toString('base64')}`);
  });
});

describe('callWebhook: retries', () => {
  it('retries 503 twice then succeeds, with the same X-Webhook-Id and a valid signature on every attempt', async () => {
    r.answers = [{ status: 503, body: 'busy' }, { status: 503, body: 'busy' }, { status: 200, body: 'done' }];
    const result = await callWebhook(deps, input());
    expect(result).toMatchObject({ ok: true, status: 200, attempts: 3, bodyExcerpt: 'done' });
    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((q) => q.headers['x-webhook-id']))).toEqual(new Set(['0190c0de-0000-7000-8000-00000000abcd']));
    for (const q of r.received) expect(verifyWebhook(SECRET, String(q.headers['x-signature']), q.body)).toBe(true);
  });

  it('fails after 3 attempts of 5xx with the last status and excerpt', async () => {
    r.answers = [{ status: 500 }, { status: 502 }, { status: 503, body: 'still down' }];
    const result = await callWebhook(deps, input());
    expect(result).toMatchObject({ ok: false, status: 503, attempts: 3, bodyExcerpt: 'still down', error: 'HTTP 503' });
    expect(r.received).toHaveLength(3);
  });

  it('fails on a 4xx at once, recording the status and at most 1,000 characters of the answer', async () => {
    r.answers = [{ status: 422, body: `bad: ${'x'.repeat(5_000)}` }];
    const result = await callWebhook(deps, input());
    expect(result).toMatchObject({ ok: false, status: 422, attempts: 1, error: 'HTTP 422' });
    expect(result.bodyExcerpt).toHaveLength(1_000);
    expect(result.bodyExcerpt?.startsWith('bad: xxx')).toBe(true);
    expect(r.received).toHaveLength(1);
  });

  it('does not follow a redirect: 3xx fails with its status, the target is never called', async () => {
    r.answers = [{ status: 302, headers: { location: `${r.url}/elsewhere` } }];
    const result = await callWebhook(deps, input());
    expect(result).toMatchObject({ ok: false, status: 302, attempts: 1, error: expect.stringMatching(/redirects are not followed/) });
    expect(r.received.map((q) => q.url)).toEqual(['/hook']);
  });

  it('retries a receiver that never answers, then fails with a timeout', async () => {
    r.answers = ['hang', 'hang', 'hang'];
    const started = Date.now();
    const result = await callWebhook({ ...deps, timeoutMs: 300 }, input());
    expect(result).toMatchObject({ ok: false, status: null, attempts: 3, bodyExcerpt: null, error: 'no complete answer within 0.3 s' });
    expect(r.received).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('times out an answer whose body never ends', async () => {
    const { startSlowServer } = await import('./webhook-slow-server.js');
    const slow = await startSlowServer();
    try {
      const result = await callWebhook({ retryDelaysMs: [], timeoutMs: 300 }, input({ url: slow.url }));
      expect(result).toMatchObject({ ok: false, attempts: 1, error: 'no complete answer within 0.3 s' });
    } finally {
      await slow.close();
    }
  });

  it('retries a refused connection, then fails naming it', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    let lookups = 0;
    const result = await callWebhook(
      { ...deps, lookup: async () => (lookups++, [{ address: '127.0.0.1', family: 4 }]) },
      input({ url: `http://closed.invalid:${port}/` }),
    );
    expect(result).toMatchObject({ ok: false, status: null, attempts: 3, error: expect.stringMatching(/ECONNREFUSED/) });
    expect(lookups).toBe(3); // resolved (and checked) again on every attempt
  });
});

describe('callWebhook: rendering', () => {
  const tricky = 'a/b c&d=e?f#g ü€';
  const vars = variables({
    contact: { id: 'c1', email: 'a+b@example.com', subscribed: false, data: { plan: tricky, name: 'Say "hi"\nthen\\leave', n: 3 } },
    event: { order: { id: 'o-9', items: [{ sku: 'A' }, { sku: 'B' }], total: 12.5 } },
  });

  it('URL-encodes values in the path and the query, so each stays one segment or one value', async () => {
    await callWebhook(deps, input({ variables: vars, url: `${r.url}/p/{{contact.data.plan}}/x?plan={{contact.data.plan}}&email={{contact.email}}&none={{context.nope ?? "n/a"}}` }));
    const req = r.received[0];
    if (!req) throw new Error('no request');
    const url = new URL(req.url, r.url);
    expect(url.pathname.split('/').map(decodeURIComponent)).toEqual(['', 'p', tricky, 'x']);
    expect(url.searchParams.get('plan')).toBe(tricky);
    expect(url.searchParams.get('email')).toBe('a+b@example.com');
    expect(url.searchParams.get('none')).toBe('n/a');
    expect([...url.searchParams.keys()]).toEqual(['plan', 'email', 'none']);
    expect(url.hash).toBe('');
  });

  it('renders the body as JSON values, never by pasting text into JSON', async () => {
    const body = {
      text: 'Hi {{contact.data.name}}!',
      name: '{{contact.data.name}}',
      order: '{{event.order}}',
      inText: 'order {{event.order}}',
      sku: '{{event.order.items.1.sku}}',
      n: '{{contact.data.n}}',
      subscribed: '{{ contact.subscribed }}',
      missing: '{{context.nope}}',
      missingInText: 'x{{context.nope}}y',
      fallback: '{{context.nope ?? "free"}}',
      proto: '{{contact.constructor}}',
      nested: [{ deep: '{{workflow.name}}' }, 7, null, true],
      '{{contact.email}}': 'keys are literal',
    };
    for (const form of [body, JSON.stringify(body)]) {
      r.received.length = 0;
      const result = await callWebhook(deps, input({ variables: vars, body: form }));
      expect(result.ok).toBe(true);
      const raw = r.received[0]?.body ?? '';
      expect(JSON.parse(raw)).toEqual({
        text: 'Hi Say "hi"\nthen\\leave!',
        name: 'Say "hi"\nthen\\leave',
        order: { id: 'o-9', items: [{ sku: 'A' }, { sku: 'B' }], total: 12.5 },
        inText: 'order {"id":"o-9","items":[{"sku":"A"},{"sku":"B"}],"total":12.5}',
        sku: 'B',
        n: 3,
        subscribed: false,
        missing: null,
        missingInText: 'xy',
        fallback: 'free',
        proto: null,
        nested: [{ deep: 'Onboarding' }, 7, null, true],
        '{{contact.email}}': 'keys are literal',
      });
      expect(verifyWebhook(SECRET, String(r.received[0]?.headers['x-signature']), raw)).toBe(true);
    }
  });

  it('sends a body that is one whole tag as that value', async () => {
    await callWebhook(deps, input({ variables: vars, body: '{{event.order.items}}' }));
    expect(JSON.parse(r.received[0]?.body ?? '')).toEqual([{ sku: 'A' }, { sku: 'B' }]);
  });

  it('strips CR and LF from header values: a value cannot add a header', async () => {
    const evil = variables({ contact: { id: 'c', email: 'e@example.com', subscribed: true, data: { name: 'Ada\r\nX-Injected: yes\r\n\r\nbody', city: 'Zürich ✓' } } });
    const result = await callWebhook(deps, input({ variables: evil, headers: { 'X-Name': 'n={{contact.data.name}}', 'X-City': '{{contact.data.city}}', 'X-Static': 'a{{context.nope ?? b}}c' } }));
    expect(result.ok).toBe(true);
    const req = r.received[0];
    expect(req?.headers['x-name']).toBe('n=AdaX-Injected: yesbody');
    expect(req?.headers['x-injected']).toBeUndefined();
    expect(req?.headers['x-static']).toBe('abc');
    // Sent as UTF-8 bytes; Node reads header bytes as latin1.
    expect(Buffer.from(String(req?.headers['x-city']), 'latin1').toString('utf8')).toBe('Zürich ✓');
  });
});
