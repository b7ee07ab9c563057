import { createPublicKey, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isVerifiedSender } from '../../../src/modules/domains/sender.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { expectEnvelope } from '../../helpers/envelope.js';

interface ApiRecord {
  type: string;
  name: string;
  value: string;
  purpose: 'DKIM' | 'SPF' | 'DMARC';
  required: boolean;
  verified: boolean;
  error?: string;
}
interface ApiDomain {
  id: string;
  domain: string;
  projectId: string;
  verified: boolean;
  records: ApiRecord[];
  verifiedAt: string | null;
  lastCheckedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

let t: TestApp;
let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
  t = await createTestApp({ env: { DNS_SERVERS: dns.address } });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

/** A domain no other test (or test file) uses. */
const uniqueDomain = (tag = 'd') => `${tag}-${randomBytes(5).toString('hex')}.example.com`;

async function addDomain(project: TestProject, domain: string) {
  return t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.secret), payload: { domain } });
}

async function added(project: TestProject, domain = uniqueDomain()): Promise<ApiDomain> {
  const res = await addDomain(project, domain);
  expect(res.statusCode, res.body).toBe(201);
  return res.json<ApiDomain>();
}

const verify = (project: TestProject, id: string) =>
  t.app.inject({ method: 'GET', url: `/domains/${id}/verify`, headers: bearer(project.secret) });

function record(domain: ApiDomain, purpose: ApiRecord['purpose']): ApiRecord {
  const found = domain.records.find((r) => r.purpose === purpose);
  if (!found) throw new Error(`no ${purpose} record in ${JSON.stringify(domain)}`);
  return found;
}

const publishDkim = (domain: ApiDomain, value = record(domain, 'DKIM').value) => dns.set(record(domain, 'DKIM').name, { TXT: [value] });

const domainRow = (id: string) => t.db.db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();

describe('POST /domains', () => {
  it('adds a pending domain with its DKIM key and the DKIM, SPF and DMARC records to publish', async () => {
    const { project } = await newProject(t.app);
    const name = uniqueDomain();
    const res = await addDomain(project, `${name.toUpperCase()}.`);
    expect(res.statusCode, res.body).toBe(201);
    const domain = res.json<ApiDomain>();
    expect(domain).toMatchObject({ domain: name, projectId: project.id, verified: false, verifiedAt: null, lastCheckedAt: null });
    expect(domain.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const dkim = record(domain, 'DKIM');
    expect(dkim).toMatchObject({ type: 'TXT', required: true, verified: false });
    expect(dkim.name).toMatch(new RegExp(`^mp\\d{6}-[0-9a-f]{6}\\._domainkey\\.${name.replace(/\./g, '\\.')}$`));
    const key = /^v=DKIM1; k=rsa; p=([A-Za-z0-9+/=]+)$/.exec(dkim.value)?.[1];
    expect(key, dkim.value).toBeDefined();
    const publicKey = createPublicKey({ key: Buffer.from(key ?? '', 'base64'), format: 'der', type: 'spki' });
    expect(publicKey.asymmetricKeyType).toBe('rsa');
    expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(record(domain, 'SPF')).toMatchObject({ type: 'TXT', name, value: 'v=spf1 a mx ~all', required: false, verified: false });
    expect(record(domain, 'DMARC')).toMatchObject({ type: 'TXT', name: `_dmarc.${name}`, value: 'v=DMARC1; p=none;', required: false });

    const row = await domainRow(domain.id);
    expect(row).toMatchObject({ project_id: project.id, domain: name, verified: false, dkim_public_key: key });
    expect(row?.dkim_selector).toBe(dkim.name.split('.')[0]);
    expect(row?.dkim_private_key).toMatch(/^v1\./);
    expect(row?.dkim_private_key).not.toContain('PRIVATE KEY');
  });

  it('stores internationalised names in their ASCII form', async () => {
    const { project } = await newProject(t.app);
    const label = randomBytes(4).toString('hex');
    const domain = await added(project, `Bücher.${label}.example`);
    expect(domain.domain).toBe(`xn--bcher-kva.${label}.example`);
  });

  it.each([
    ['an IPv4 address', '192.168.1.10'],
    ['an IPv6 address', '2001:db8::1'],
    ['a bracketed IPv6 address', '[::1]'],
    ['a single label', 'localhost'],
    ['a label over 63 characters', `${'a'.repeat(64)}.com`],
    ['an underscore', 'ex_ample.com'],
    ['a leading hyphen', '-example.com'],
    ['a trailing hyphen', 'example-.com'],
    ['an empty label', 'example..com'],
    ['a numeric top-level label', 'example.123'],
    ['a name over 253 characters', `${Array.from({ length: 5 }, () => 'a'.repeat(60)).join('.')}.com`],
    ['a URL', 'https://example.com'],
    ['a port', 'example.com:25'],
    ['a wildcard', '*.example.com'],
    ['an empty string', ''],
  ])('rejects %s with 422 VALIDATION_ERROR on domain', async (_what, domain) => {
    const { project } = await newProject(t.app);
    const error = expectEnvelope(await addDomain(project, domain), 422, 'VALIDATION_ERROR');
    expect(error.errors).toEqual([expect.objectContaining({ field: 'domain', code: 'invalid_string' })]);
    expect(await t.db.db.selectFrom('domains').select('id').where('project_id', '=', project.id).execute()).toEqual([]);
  });

  it('rejects a missing or non-string domain with 422', async () => {
    const { project } = await newProject(t.app);
    for (const payload of [{}, { domain: 42 }]) {
      const res = await t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.secret), payload });
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(error.errors).toEqual([expect.objectContaining({ field: 'domain', code: 'invalid_type' })]);
    }
  });

  it('refuses the same domain twice in one project with 409 CONFLICT', async () => {
    const { project } = await newProject(t.app);
    const name = uniqueDomain();
    await added(project, name);
    expectEnvelope(await addDomain(project, name), 409, 'CONFLICT');
    expectEnvelope(await addDomain(project, `${name.toUpperCase()}.`), 409, 'CONFLICT');
    expect(await t.db.db.selectFrom('domains').select('id').where('project_id', '=', project.id).execute()).toHaveLength(1);
  });

  it('lets several projects add a pending domain, and refuses it with 409 once another project verified it', async () => {
    const { project: a } = await newProject(t.app);
    const { project: b } = await newProject(t.app);
    const { project: c } = await newProject(t.app);
    const name = uniqueDomain();
    const mine = await added(a, name);
    await added(b, name); // pending in A: anyone may still claim it
    publishDkim(mine);
    expect((await verify(a, mine.id)).json<ApiDomain>().verified).toBe(true);
    const error = expectEnvelope(await addDomain(c, name), 409, 'CONFLICT');
    expect(error.message).toContain(name);
    expect(error.message).not.toContain(a.id);
  });
});

describe('GET /domains/:id/verify', () => {
  it('verifies only once the exact DKIM record is served, reporting each record on the way', async () => {
    const { project } = await newProject(t.app);
    const domain = await added(project);

    const absent = (await verify(project, domain.id)).json<ApiDomain>();
    expect(absent.verified).toBe(false);
    expect(record(absent, 'DKIM')).toMatchObject({ verified: false, error: 'record not found' });
    expect(absent.lastCheckedAt).not.toBeNull();

    const otherKey = (await added(project)).records[0]?.value ?? '';
    publishDkim(domain, otherKey);
    const wrong = (await verify(project, domain.id)).json<ApiDomain>();
    expect(wrong.verified).toBe(false);
    expect(record(wrong, 'DKIM')).toMatchObject({ verified: false, error: 'value does not match' });
    expect((await domainRow(domain.id))?.verified).toBe(false);
    expect(await isVerifiedSender(t.db.db, project.id, `hello@${domain.domain}`)).toBe(false);

    // Spaces around ';' and '=' and a space inside the key (as DNS consoles split it) are the same record.
    const key = record(domain, 'DKIM').value.replace(/^.*p=/, '');
    publishDkim(domain, `v = DKIM1 ;k=rsa;  p=${key.slice(0, 200)} ${key.slice(200)};`);
    const res = await verify(project, domain.id);
    expect(res.statusCode, res.body).toBe(200);
    const ok = res.json<ApiDomain>();
    expect(ok.verified).toBe(true);
    expect(ok.verifiedAt).not.toBeNull();
    expect(record(ok, 'DKIM')).toEqual(expect.objectContaining({ verified: true }));
    expect(record(ok, 'DKIM').error).toBeUndefined();
    const row = await domainRow(domain.id);
    expect(row).toMatchObject({ verified: true, verified_at: expect.any(Date), last_checked_at: expect.any(Date) });
    expect(row?.records.find((r) => r.purpose === 'DKIM')?.verified).toBe(true);
    expect(await isVerifiedSender(t.db.db, project.id, `hello@${domain.domain}`)).toBe(true);
  });

  it('reports SPF and DMARC without requiring them', async () => {
    const { project } = await newProject(t.app);
    const domain = await added(project);
    publishDkim(domain);
    const dkimOnly = (await verify(project, domain.id)).json<ApiDomain>();
    expect(dkimOnly.verified).toBe(true);
    expect(record(dkimOnly, 'SPF')).toMatchObject({ verified: false, error: 'record not found' });
    expect(record(dkimOnly, 'DMARC')).toMatchObject({ verified: false, error: 'record not found' });

    dns.set(domain.domain, { TXT: ['google-site-verification=abc', 'v=spf1 include:relay.example.net ~all'] });
    dns.set(`_dmarc.${domain.domain}`, { TXT: ['v=DMARC1; p=quarantine; rua=mailto:dmarc@example.net'] });
    const all = (await verify(project, domain.id)).json<ApiDomain>();
    expect(all.records.map((r) => [r.purpose, r.verified, r.error])).toEqual([
      ['DKIM', true, undefined],
      ['SPF', true, undefined],
      ['DMARC', true, undefined],
    ]);

    dns.set(domain.domain, { TXT: ['v=spf1 a ~all', 'v=spf1 mx ~all'] });
    const twoSpf = (await verify(project, domain.id)).json<ApiDomain>();
    expect(twoSpf.verified).toBe(true);
    expect(record(twoSpf, 'SPF')).toMatchObject({ verified: false, error: expect.stringContaining('more than one SPF record') });
  });

  it('un-verifies a verified domain whose DKIM record was removed', async () => {
    const { project } = await newProject(t.app);
    const domain = await added(project);
    publishDkim(domain);
    expect((await verify(project, domain.id)).json<ApiDomain>().verified).toBe(true);
    dns.remove(record(domain, 'DKIM').name);
    const gone = (await verify(project, domain.id)).json<ApiDomain>();
    expect(gone).toMatchObject({ verified: false, verifiedAt: null });
    expect((await domainRow(domain.id))?.verified).toBe(false);
  });

  it('answers 409 (never 500) to the project that loses a verification race, and keeps it pending', async () => {
    const name = uniqueDomain();
    const projects = [(await newProject(t.app)).project, (await newProject(t.app)).project];
    const domains = await Promise.all(projects.map((p) => added(p, name)));
    const published = domains.map((d) => record(d, 'DKIM'));
    for (const r of published) dns.set(r.name, { TXT: [r.value] });

    const answers = await Promise.all(projects.map((p, i) => verify(p, domains[i]?.id ?? '')));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409]);
    const loser = answers.findIndex((a) => a.statusCode === 409);
    const [loserProject, loserDomain, loserAnswer] = [projects[loser], domains[loser], answers[loser]];
    if (!loserProject || !loserDomain || !loserAnswer) throw new Error('no loser');
    const error = expectEnvelope(loserAnswer, 409, 'CONFLICT');
    expect(error.message).toContain(name);
    const rows = await t.db.db.selectFrom('domains').select(['id', 'verified', 'records']).where('domain', '=', name).execute();
    expect(rows.filter((r) => r.verified)).toHaveLength(1);
    const loserRow = rows.find((r) => r.id === loserDomain.id);
    expect(loserRow?.verified).toBe(false);
    expect(loserRow?.records.find((r) => r.purpose === 'DKIM')?.error).toMatch(/another project/);

    // Checked again later: still 409, still pending.
    expectEnvelope(await verify(loserProject, loserDomain.id), 409, 'CONFLICT');
    expect((await domainRow(loserDomain.id))?.verified).toBe(false);
  });
});

describe('GET /domains/project/:projectId and DELETE /domains/:id', () => {
  it("lists the project's pending and verified domains, and deletes one with 204", async () => {
    const { project, user } = await newProject(t.app);
    const pending = await added(project);
    const verified = await added(project);
    publishDkim(verified);
    await verify(project, verified.id);

    const res = await t.app.inject({ method: 'GET', url: `/domains/project/${project.id}`, headers: bearer(project.secret) });
    expect(res.statusCode, res.body).toBe(200);
    const list = res.json<ApiDomain[]>();
    expect(list.map((d) => [d.id, d.verified])).toEqual([
      [verified.id, true],
      [pending.id, false],
    ]);
    expect(list[0]?.records).toHaveLength(3);

    // The dashboard's way in: session cookie + X-Project-Id.
    const viaSession = await t.app.inject({
      method: 'GET',
      url: `/domains/project/${project.id}`,
      headers: { cookie: user.cookie, 'x-project-id': project.id },
    });
    expect(viaSession.json<ApiDomain[]>()).toHaveLength(2);

    const del = await t.app.inject({ method: 'DELETE', url: `/domains/${pending.id}`, headers: bearer(project.secret) });
    expect(del.statusCode, del.body).toBe(204);
    expect(del.body).toBe('');
    expect(await domainRow(pending.id)).toBeUndefined();
    expectEnvelope(await t.app.inject({ method: 'DELETE', url: `/domains/${pending.id}`, headers: bearer(project.secret) }), 404, 'NOT_FOUND');
  });

  it("answers 404 for another project's domains and list, and for malformed ids", async () => {
    const { project: owner } = await newProject(t.app);
    const { project: other } = await newProject(t.app);
    const domain = await added(owner);
    const as = bearer(other.secret);
    expectEnvelope(await verify(other, domain.id), 404, 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'DELETE', url: `/domains/${domain.id}`, headers: as }), 404, 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'GET', url: `/domains/project/${owner.id}`, headers: as }), 404, 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/domains/project/not-a-uuid', headers: as }), 404, 'NOT_FOUND');
    expectEnvelope(await verify(other, 'not-a-uuid'), 404, 'NOT_FOUND');
    expectEnvelope(await t.app.inject({ method: 'DELETE', url: '/domains/12345', headers: as }), 404, 'NOT_FOUND');
    expect(await domainRow(domain.id)).toBeDefined();
    expect((await domainRow(domain.id))?.last_checked_at).toBeNull();
  });

  it('needs the secret key', async () => {
    const { project } = await newProject(t.app);
    const res = await t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.public), payload: { domain: uniqueDomain() } });
    expectEnvelope(res, 401, 'INVALID_API_KEY');
  });
});

describe('OpenAPI', () => {
  it('documents the domain routes with their request and response shapes', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode, res.body).toBe(200);
    const doc = res.json<{ paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } }>();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/domains', '/domains/project/{projectId}', '/domains/{id}/verify', '/domains/{id}']),
    );
    // Request bodies refer to the input variant of a registered schema.
    expect(doc.paths['/domains']?.post).toMatchObject({ requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateDomainBodyInput' } } } } });
    expect(doc.components.schemas.CreateDomainBodyInput).toMatchObject({ properties: { domain: { type: 'string' } }, required: ['domain'] });
    expect(doc.components.schemas.Domain).toBeDefined();
  });
});
