import MailChecker from 'mailchecker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { expectEnvelope } from '../../helpers/envelope.js';

let dns: TestDnsServer;
let t: TestApp;
let project: TestProject;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.set('good.test', { MX: [{ exchange: 'mx.good.test', priority: 10 }], A: ['192.0.2.1'] });
  dns.set('www.good.test', { A: ['192.0.2.2'] });
  // A disposable provider with working mail: still not valid.
  dns.set('mailinator.com', { MX: [{ exchange: 'mx.mailinator.com', priority: 10 }] });
  t = await createTestApp({ env: { DNS_SERVERS: dns.address } });
  ({ project } = await newProject(t.app));
});
afterAll(async () => {
  await t.close();
  await dns.close();
});

const verify = (payload: unknown, key = project.secret) =>
  t.app.inject({ method: 'POST', url: '/v1/verify', headers: bearer(key), payload: payload as object });

async function verified(email: string) {
  const res = await verify({ email });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expect(body.success).toBe(true);
  return body.data;
}

describe('POST /v1/verify', () => {
  it('answers the full result for a deliverable address', async () => {
    expect(await verified('jane@good.test')).toEqual({
      email: 'jane@good.test',
      valid: true,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      isPersonalEmail: false,
      domainExists: true,
      hasWebsite: true,
      hasMxRecords: true,
      reasons: [],
    });
  });

  it('flags plus addressing as an alias and still accepts it', async () => {
    expect(await verified('jane+news@good.test')).toMatchObject({ valid: true, isPlusAddressed: true, isAlias: true });
  });

  it('rejects a malformed address with 422 invalid_string (SPEC: the body email has email format)', async () => {
    for (const email of ['not-an-email', 'jane@@good.test', 'jane..doe@good.test', 'jane@good', '   ']) {
      const res = await verify({ email });
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors[0], email).toMatchObject({ field: 'email' });
    }
  });

  it('trims surrounding whitespace before checking', async () => {
    expect(await verified('  jane@good.test\n')).toMatchObject({ email: 'jane@good.test', valid: true });
  });

  it('reports a domain without DNS records as domain_not_found', async () => {
    expect(await verified('jane@missing.test')).toMatchObject({
      valid: false,
      domainExists: false,
      hasMxRecords: false,
      hasWebsite: false,
      reasons: ['domain_not_found'],
    });
  });

  it('marks disposable domains from the mailchecker list and refuses them', async () => {
    expect(MailChecker.isValid('someone@mailinator.com')).toBe(false);
    const data = await verified('someone@mailinator.com');
    expect(data).toMatchObject({ valid: false, isDisposable: true, isPersonalEmail: false, hasMxRecords: true });
    expect(data.reasons).toEqual(['disposable']);
  });

  it('marks free-mail providers as personal', async () => {
    const data = await verified('jane.doe@gmail.com');
    expect(data).toMatchObject({ isPersonalEmail: true, isDisposable: false, isTypo: false, isAlias: true, isPlusAddressed: false });
    expect(data.suggestedEmail).toBeUndefined();
    // gmail.com does not resolve against the test DNS server: it is reported as such.
    expect(data.valid).toBe(false);
  });

  it('suggests the corrected address for a misspelt provider', async () => {
    const data = await verified('user@gmial.com');
    expect(data).toMatchObject({ isTypo: true, suggestedEmail: 'user@gmail.com', isPersonalEmail: false });
    expect(data.reasons).toContain('possible_typo');
  });

  it('omits suggestedEmail when there is no suggestion', async () => {
    const data = await verified('jane@good.test');
    expect(data.isTypo).toBe(false);
    expect('suggestedEmail' in data).toBe(false);
  });

  it('reuses DNS answers for a domain: a record removed since is not seen within the TTL', async () => {
    dns.set('cached.test', { MX: [{ exchange: 'mx.cached.test', priority: 10 }] });
    expect(await verified('a@cached.test')).toMatchObject({ valid: true, hasMxRecords: true });
    dns.remove('cached.test');
    // Without the cache this would be domain_not_found (as for any name the server lacks).
    expect(await verified('b@cached.test')).toMatchObject({ valid: true, hasMxRecords: true, reasons: [] });
  });

  it('rejects a missing, non-string, empty or over-long email with 422 VALIDATION_ERROR', async () => {
    const cases: [unknown, string][] = [
      [{}, 'invalid_type'],
      [{ email: 42 }, 'invalid_type'],
      [{ email: null }, 'invalid_type'],
      [{ email: '' }, 'too_small'],
      [{ email: 'not-an-email' }, 'invalid_string'],
      [{ email: `${'a'.repeat(311)}@good.test` }, 'too_big'],
    ];
    for (const [payload, code] of cases) {
      const res = await verify(payload);
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors, JSON.stringify(payload)).toEqual([expect.objectContaining({ field: 'email', code })]);
    }
  });

  it('answers a well-formed but over-long address (255 to 320 characters) as invalid_format', async () => {
    const email = `${'a'.repeat(60)}@${Array.from({ length: 5 }, () => 'b'.repeat(45)).join('.')}.test`;
    expect(email.length).toBeGreaterThan(254);
    const res = await verify({ email });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ valid: false, reasons: ['invalid_format'] });
  });

  it('rejects a public key with 401 INVALID_API_KEY', async () => {
    const res = await verify({ email: 'jane@good.test' }, project.public);
    const error = expectEnvelope(res, 401, 'INVALID_API_KEY');
    expect(error.message).toMatch(/requires a secret key/);
  });

  it('rejects a request without a key with 401', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/verify', payload: { email: 'jane@good.test' } });
    expectEnvelope(res, 401, 'UNAUTHORIZED');
  });
});
