import { createPublicKey, createSign, createVerify, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimSecretBox, loadDkimKey, newDkimSelector } from '../../../src/modules/domains/dkim-keys.js';
import { canonicalTagList } from '../../../src/modules/domains/verification.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { createTestApp, TEST_SECRET, type TestApp } from '../../helpers/app.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';

interface ApiDomain {
  id: string;
  domain: string;
  verified: boolean;
  records: { name: string; value: string; purpose: string }[];
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

describe('DKIM keys', () => {
  it('stores the private key sealed, and loadDkimKey returns a key that signs what the DNS record verifies', async () => {
    const { project } = await newProject(t.app);
    const { project: other } = await newProject(t.app);
    const name = `k-${randomBytes(5).toString('hex')}.example.com`;
    const res = await t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.secret), payload: { domain: name } });
    expect(res.statusCode, res.body).toBe(201);
    const domain = res.json<ApiDomain>();
    const dkim = domain.records.find((r) => r.purpose === 'DKIM');
    if (!dkim) throw new Error('no DKIM record');

    const row = await t.db.db.selectFrom('domains').selectAll().where('id', '=', domain.id).executeTakeFirstOrThrow();
    expect(row.dkim_private_key).not.toMatch(/BEGIN|PRIVATE/);
    const box = dkimSecretBox(TEST_SECRET);
    expect(box.open(row.dkim_private_key)).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(() => dkimSecretBox('another-secret-0123456789abcdefghijklmnop').open(row.dkim_private_key)).toThrow();

    // Pending: no key for signing yet.
    expect(await loadDkimKey(t.db.db, box, project.id, name)).toBeUndefined();

    dns.set(dkim.name, { TXT: [dkim.value] });
    const verified = await t.app.inject({ method: 'GET', url: `/domains/${domain.id}/verify`, headers: bearer(project.secret) });
    expect(verified.json<ApiDomain>().verified, verified.body).toBe(true);

    const key = await loadDkimKey(t.db.db, box, project.id, `${name.toUpperCase()}.`);
    expect(key).toEqual({ domainName: name, keySelector: row.dkim_selector, privateKey: expect.stringContaining('PRIVATE KEY') });
    const message = 'DKIM-Signature test body';
    const signature = createSign('sha256').update(message).sign(key?.privateKey ?? '');
    const published = createPublicKey({ key: Buffer.from(dkim.value.replace(/^.*p=/, ''), 'base64'), format: 'der', type: 'spki' });
    expect(createVerify('sha256').update(message).verify(published, signature)).toBe(true);
    expect(createVerify('sha256').update(`${message}!`).verify(published, signature)).toBe(false);

    // Only the project that verified it gets the key; nonsense ids find nothing.
    expect(await loadDkimKey(t.db.db, box, other.id, name)).toBeUndefined();
    expect(await loadDkimKey(t.db.db, box, 'not-a-uuid', name)).toBeUndefined();
    expect(await loadDkimKey(t.db.db, box, project.id, `other.${name}`)).toBeUndefined();
  });

  it('names selectors mp<yyyymm>-<random>, different every time', () => {
    const a = newDkimSelector(new Date('2025-03-09T12:00:00Z'));
    expect(a).toMatch(/^mp202503-[0-9a-f]{6}$/);
    expect(newDkimSelector(new Date('2025-03-09T12:00:00Z'))).not.toBe(a);
  });

  it('compares DKIM records after normalising whitespace around ; and = and inside the key', () => {
    const expected = canonicalTagList('v=DKIM1; k=rsa; p=ABCDEF');
    for (const published of ['v=DKIM1;k=rsa;p=ABCDEF', ' v = DKIM1 ; k=rsa ; p=ABC DEF ; ', 'v=DKIM1; k=rsa; p=ABCDEF;']) {
      expect(canonicalTagList(published)).toBe(expected);
    }
    for (const different of ['v=DKIM1; k=rsa; p=ABCDEG', 'v=DKIM1; p=ABCDEF', 'v=DKIM1; k=rsa; t=s; p=ABCDEF', 'k=rsa; v=DKIM1; p=ABCDEF']) {
      expect(canonicalTagList(different)).not.toBe(expected);
    }
  });
});
