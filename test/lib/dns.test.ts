import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDns } from '../../src/lib/dns.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';

let server: TestDnsServer;
beforeAll(async () => {
  server = await startDnsServer();
});
afterAll(() => server.close());

describe('dns lookups through DNS_SERVERS', () => {
  it('joins long TXT records, and reads MX and addresses', async () => {
    const long = `v=DKIM1; k=rsa; p=${'A'.repeat(400)}`;
    server.set('sel._domainkey.example.test', { TXT: [long] });
    server.set('example.test', { MX: [{ exchange: 'mx.example.test', priority: 10 }], A: ['192.0.2.1'] });
    const dns = createDns({ servers: [server.address] });
    expect(await dns.txt('sel._domainkey.example.test')).toEqual({ status: 'found', records: [long] });
    expect(await dns.mx('example.test')).toEqual({ status: 'found', records: [{ exchange: 'mx.example.test', priority: 10 }] });
    expect(await dns.addresses('example.test')).toEqual({ status: 'found', records: ['192.0.2.1'] });
  });

  it('tells a missing name from an unanswered one', async () => {
    server.blackhole('slow.example.test');
    const dns = createDns({ servers: [server.address], timeoutMs: 200, tries: 1 });
    expect(await dns.txt('nothing.example.test')).toEqual({ status: 'missing' });
    const started = Date.now();
    const slow = await dns.txt('slow.example.test');
    expect(slow.status).toBe('error');
    // Ends at its 200 ms timeout instead of hanging: the bound only needs to sit far below a
    // hang and far above a loaded 2-core machine's scheduling noise.
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
