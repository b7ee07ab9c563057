import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callWebhook, type WebhookInput } from '../../../src/modules/workflows/webhook/call.js';
import { blockedRange, type LookupAll } from '../../../src/lib/ssrf.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { type Receiver, SECRET, startReceiver, variables } from './webhook-receiver.js';

let r: Receiver;
let dns: TestDnsServer;
let dnsLookup: LookupAll;
beforeAll(async () => {
  [r, dns] = await Promise.all([startReceiver(), startDnsServer()]);
  // The resolver is injected: the real DNS server on loopback answers for test names.
  const resolver = new Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([dns.address]);
  dnsLookup = async (host) => {
    const [v4, v6] = await Promise.all([resolver.resolve4(host).catch(() => []), resolver.resolve6(host).catch(() => [])]);
    return [...v4.map((address) => ({ address, family: 4 as const })), ...v6.map((address) => ({ address, family: 6 as const }))];
  };
});
afterAll(async () => {
  await Promise.all([r.close(), dns.close()]);
});
beforeEach(() => {
  r.received.length = 0;
});

const input = (url: string, allowPrivate = false): WebhookInput => ({ url, variables: variables(), secret: SECRET, webhookId: 'w1', allowPrivate });
const deps = { retryDelaysMs: [5, 5], timeoutMs: 2_000 };

describe('blockedRange', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0.0.0.0', 'this network'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of link-local'],
    ['64:ff9b:1::1', 'not global unicast'],
    ['2002:7f00:1::1', '6to4 of loopback'],
    ['fd00::1', 'not global unicast'],
    ['fc00::1', 'not global unicast'],
    ['fe80::1%eth0', 'not global unicast'],
    ['ff02::1', 'not global unicast'],
    ['100::1', 'not global unicast'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'IETF protocol assignments (Teredo, benchmarking, ORCHID)'],
  ])('refuses %s (%s)', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2a00:1450::1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'allows the public address %s',
    (address) => {
      expect(blockedRange(address)).toBeUndefined();
    },
  );
});

describe('callWebhook: private addresses refused (WEBHOOK_ALLOW_PRIVATE false)', () => {
  const literals = (port: number) => [
    `http://127.0.0.1:${port}/hook`,
    `http://[::1]:${port}/hook`,
    `http://[::ffff:127.0.0.1]:${port}/hook`,
    `http://2130706433:${port}/hook`,
    `http://0x7f.1:${port}/hook`,
    `http://127.1:${port}/hook`,
    `http://0177.0.0.1:${port}/hook`,
    `http://0.0.0.0:${port}/hook`,
    `http://0:${port}/hook`,
    `http://[::]:${port}/hook`,
    `http://10.0.0.1:${port}/hook`,
    `http://192.168.1.1:${port}/hook`,
    `http://169.254.169.254/latest/meta-data/`,
    `http://[fd00::1]:${port}/hook`,
    `http://[64:ff9b::7f00:1]:${port}/hook`,
    `https://127.0.0.1:${port}/hook`,
  ];

  it('refuses every form of a private literal before connecting, without retrying and without DNS', async () => {
    let lookups = 0;
    const counting: LookupAll = async (host) => {
      lookups++;
      return dnsLookup(host);
    };
    for (const url of literals(r.port)) {
      const result = await callWebhook({ ...deps, lookup: counting }, input(url));
      expect(result, url).toMatchObject({ ok: false, status: null, attempts: 1, error: expect.stringMatching(/private addresses are refused/) });
    }
    expect(lookups).toBe(0);
    expect(r.received).toHaveLength(0);
  });

  it('refuses localhost through the system resolver', async () => {
    const result = await callWebhook(deps, input(`http://localhost:${r.port}/hook`));
    expect(result).toMatchObject({ ok: false, attempts: 1, error: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1) \(loopback\)/) });
    expect(r.received).toHaveLength(0);
  });

  it('refuses a name whose DNS answer is loopback, or holds one private address among public ones', async () => {
    dns.set('hook.loop.test', { A: ['127.0.0.1'] });
    dns.set('hook.mixed.test', { A: ['93.184.216.34', '127.0.0.1'] });
    dns.set('hook.v6.test', { AAAA: ['::ffff:127.0.0.1'] });
    for (const host of ['hook.loop.test', 'hook.mixed.test', 'hook.v6.test']) {
      const result = await callWebhook({ ...deps, lookup: dnsLookup }, input(`http://${host}:${r.port}/hook`));
      expect(result, host).toMatchObject({ ok: false, attempts: 1, error: expect.stringMatching(/private addresses are refused/) });
    }
    expect(r.received).toHaveLength(0);
  });

  it('checks again on every attempt: an answer that turns private stops the retries', async () => {
    let calls = 0;
    const rebinding: LookupAll = async () => {
      calls++;
      if (calls === 1) throw Object.assign(new Error('queryA ESERVFAIL hook.rebind.test'), { code: 'ESERVFAIL' });
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const result = await callWebhook({ ...deps, lookup: rebinding }, input(`http://hook.rebind.test:${r.port}/hook`));
    expect(result).toMatchObject({ ok: false, attempts: 2, error: expect.stringMatching(/127\.0\.0\.1 \(loopback\)/) });
    expect(calls).toBe(2);
    expect(r.received).toHaveLength(0);
  });
});

describe('callWebhook: WEBHOOK_ALLOW_PRIVATE true', () => {
  it('calls loopback literals and names resolving to loopback', async () => {
    dns.set('hook.allowed.test', { A: ['127.0.0.1'] });
    for (const url of [`http://127.0.0.1:${r.port}/a`, `http://2130706433:${r.port}/b`, `http://hook.allowed.test:${r.port}/c`]) {
      const result = await callWebhook({ ...deps, lookup: dnsLookup }, input(url, true));
      expect(result, url).toMatchObject({ ok: true, status: 200 });
    }
    expect(r.received.map((q) => [q.url, q.headers.host])).toEqual([
      ['/a', `127.0.0.1:${r.port}`],
      ['/b', `127.0.0.1:${r.port}`],
      ['/c', `hook.allowed.test:${r.port}`],
    ]);
  });

  it('connects to the address it resolved, never asking another resolver (no rebinding window)', async () => {
    // `.invalid` never resolves through the system: reaching the receiver proves the socket used
    // the injected answer, resolved exactly once per attempt.
    let calls = 0;
    const pinned: LookupAll = async () => (calls++, [{ address: '127.0.0.1', family: 4 }]);
    const result = await callWebhook({ ...deps, lookup: pinned }, input(`http://pinned.invalid:${r.port}/p`, true));
    expect(result).toMatchObject({ ok: true, attempts: 1 });
    expect(calls).toBe(1);
    expect(r.received[0]?.headers.host).toBe(`pinned.invalid:${r.port}`);
  });
});
