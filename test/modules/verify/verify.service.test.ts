import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDns, type Dns } from '../../../src/lib/dns.js';
import { createDomainCache } from '../../../src/modules/verify/domain-cache.js';
import { createVerifier } from '../../../src/modules/verify/verify.service.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';

let server: TestDnsServer;
/** Short timeouts so the blackholed names fail fast (the app's resolver uses 2 s × 2 tries). */
let dns: Dns;

beforeAll(async () => {
  server = await startDnsServer();
  dns = createDns({ servers: [server.address], timeoutMs: 200, tries: 1 });
  server.set('mail-and-web.test', { MX: [{ exchange: 'mx.mail-and-web.test', priority: 10 }], A: ['192.0.2.10'] });
  server.set('www.mail-and-web.test', { A: ['192.0.2.11'] });
  server.set('mx-only.test', { MX: [{ exchange: 'mx.mx-only.test', priority: 10 }] });
  server.set('a-only.test', { A: ['192.0.2.20'] });
  server.set('www-only.test', {});
  server.set('www.www-only.test', { AAAA: ['2001:db8::1'] });
  server.set('null-mx.test', { MX: [{ exchange: '.', priority: 0 }], A: ['192.0.2.30'] });
  server.blackhole('slow.test');
  server.set('slow-web.test', { MX: [{ exchange: 'mx.slow-web.test', priority: 10 }] });
  server.blackhole('www.slow-web.test');
});
afterAll(() => server.close());

/** Counts the lookups that reach `inner`. */
function countingDns(inner: Dns): { dns: Dns; names: string[] } {
  const names: string[] = [];
  return {
    names,
    dns: {
      txt: (n) => (names.push(`TXT ${n}`), inner.txt(n)),
      mx: (n) => (names.push(`MX ${n}`), inner.mx(n)),
      addresses: (n) => (names.push(`A ${n}`), inner.addresses(n)),
    },
  };
}

describe('verify service: DNS findings', () => {
  it('accepts a domain with MX records, and reports its website', async () => {
    const r = await createVerifier({ dns }).verify('user@mail-and-web.test');
    expect(r).toMatchObject({ valid: true, domainExists: true, hasMxRecords: true, hasWebsite: true, reasons: [] });
  });

  it('has no website when neither the domain nor www. has addresses', async () => {
    const r = await createVerifier({ dns }).verify('user@mx-only.test');
    expect(r).toMatchObject({ valid: true, hasMxRecords: true, hasWebsite: false, domainExists: true, reasons: [] });
  });

  it('accepts A records without MX as the implicit MX (RFC 5321 §5.1), noting no_mx_records', async () => {
    const r = await createVerifier({ dns }).verify('user@a-only.test');
    expect(r).toMatchObject({ valid: true, hasMxRecords: false, domainExists: true, hasWebsite: true, reasons: ['no_mx_records'] });
  });

  it('does not fall back to www. addresses for mail', async () => {
    const r = await createVerifier({ dns }).verify('user@www-only.test');
    expect(r).toMatchObject({ valid: false, hasMxRecords: false, domainExists: true, hasWebsite: true, reasons: ['no_mx_records'] });
  });

  it('reads a null MX (RFC 7505) as "accepts no mail" even with A records', async () => {
    const r = await createVerifier({ dns }).verify('user@null-mx.test');
    expect(r).toMatchObject({ valid: false, hasMxRecords: false, domainExists: true, hasWebsite: true, reasons: ['null_mx'] });
  });

  it('reports a name DNS does not know as domain_not_found', async () => {
    const r = await createVerifier({ dns }).verify('user@nowhere.test');
    expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false, reasons: ['domain_not_found'] });
  });

  it('reports an unanswered domain as dns_timeout, never as missing, and keeps valid false', async () => {
    const started = Date.now();
    const r = await createVerifier({ dns }).verify('user@slow.test');
    expect(r.valid).toBe(false);
    expect(r.reasons).toEqual(['dns_timeout']);
    expect(r.reasons).not.toContain('domain_not_found');
    // Bounded by the lookup timeout rather than hanging; generous for a loaded machine.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('stays valid when only the website lookup times out, and says the website is unknown', async () => {
    const r = await createVerifier({ dns }).verify('user@slow-web.test');
    expect(r).toMatchObject({ valid: true, hasMxRecords: true, hasWebsite: false, reasons: ['dns_timeout'] });
  });

  it('answers dns_error when the name server is unreachable', async () => {
    const dead = createDns({ servers: ['127.0.0.1:9'], timeoutMs: 200, tries: 1 });
    const r = await createVerifier({ dns: dead }).verify('user@mail-and-web.test');
    expect(r.valid).toBe(false);
    expect(r.reasons).toEqual(['dns_error']);
  });

  it('skips DNS for a malformed address', async () => {
    const counted = countingDns(dns);
    const r = await createVerifier({ dns: counted.dns }).verify('not an address');
    expect(r).toMatchObject({ valid: false, reasons: ['invalid_format'] });
    expect(counted.names).toEqual([]);
  });
});

describe('verify service: per-domain cache', () => {
  it('asks DNS once per domain within the TTL, whatever the local part', async () => {
    const counted = countingDns(dns);
    const verifier = createVerifier({ dns: counted.dns });
    const first = await verifier.verify('a@mail-and-web.test');
    expect(counted.names.sort()).toEqual(['A mail-and-web.test', 'A www.mail-and-web.test', 'MX mail-and-web.test']);
    const second = await verifier.verify('b@MAIL-AND-WEB.test');
    expect(counted.names).toHaveLength(3);
    expect({ ...second, email: first.email }).toEqual(first);
  });

  it('shares lookups in flight between concurrent checks of one domain', async () => {
    const counted = countingDns(dns);
    const verifier = createVerifier({ dns: counted.dns });
    await Promise.all([verifier.verify('a@mx-only.test'), verifier.verify('b@mx-only.test'), verifier.verify('c@mx-only.test')]);
    expect(counted.names).toHaveLength(3);
  });

  it('asks again once the TTL has passed, and keeps failures for the shorter error TTL', async () => {
    let now = 1_000_000;
    const counted = countingDns(dns);
    const cache = createDomainCache(counted.dns, { ttlMs: 60_000, errorTtlMs: 5_000, now: () => now });
    await cache.lookup('a-only.test');
    await cache.lookup('slow.test');
    expect(counted.names).toHaveLength(6);
    now += 5_001;
    await cache.lookup('a-only.test');
    expect(counted.names).toHaveLength(6);
    const again = await cache.lookup('slow.test');
    expect(again.mx.status).toBe('error');
    expect(counted.names).toHaveLength(9);
    now += 60_000;
    await cache.lookup('a-only.test');
    expect(counted.names).toHaveLength(12);
  });

  it('keeps at most maxEntries domains, dropping the least recently used', async () => {
    const counted = countingDns(dns);
    const cache = createDomainCache(counted.dns, { maxEntries: 2 });
    await cache.lookup('a-only.test');
    await cache.lookup('mx-only.test');
    await cache.lookup('a-only.test'); // now the most recent
    await cache.lookup('null-mx.test'); // evicts mx-only.test
    expect(cache.size).toBe(2);
    const before = counted.names.length;
    await cache.lookup('a-only.test');
    expect(counted.names).toHaveLength(before);
    await cache.lookup('mx-only.test');
    expect(counted.names).toHaveLength(before + 3);
  });
});
