import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recheckDomains } from '../../../src/modules/domains/domains.service.js';
import { isVerifiedSender } from '../../../src/modules/domains/sender.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectOneErrorLine, runCli as runCliIn } from '../../helpers/cli.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';


let t: TestApp;
let dns: TestDnsServer;
let dataDir: string;
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'mailplatform-domains-cli-'));
  dns = await startDnsServer();
  t = await createTestApp({ env: { DNS_SERVERS: dns.address } });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

const runCli = (args: string[]) => runCliIn(args, { dataDir });

const uniqueDomain = () => `c-${randomBytes(5).toString('hex')}.example.com`;

async function add(project: TestProject, domain: string): Promise<string> {
  const res = await t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.secret), payload: { domain } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<{ id: string }>().id;
}

const row = (id: string) => t.db.db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('admin CLI: verify-domain', () => {
  it('marks a domain verified without DNS, says so, and background checks leave it verified', async () => {
    const { project } = await newProject(t.app);
    const name = uniqueDomain();
    const id = await add(project, name);

    const res = await runCli(['verify-domain', '--domain', `${name.toUpperCase()}.`]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout.trimEnd()).toBe(`operator: marked ${name} verified for project ${project.id} (Test project) without a DNS check`);
    expect(await row(id)).toMatchObject({ verified: true, verified_at: expect.any(Date), last_checked_at: null });
    expect(await isVerifiedSender(t.db.db, project.id, `news@${name}`)).toBe(true);

    // DNS has no record: neither the cron nor a forced check takes the operator's word back.
    expect(await recheckDomains(t.deps, { projectIds: [project.id] })).toMatchObject({ checked: 0 });
    const check = await t.app.inject({ method: 'GET', url: `/domains/${id}/verify`, headers: bearer(project.secret) });
    expect(check.statusCode, check.body).toBe(200);
    expect(check.json()).toMatchObject({ verified: true, lastCheckedAt: null });
    expect(check.json<{ records: { purpose: string; error?: string }[] }>().records[0]).toMatchObject({ purpose: 'DKIM', error: 'record not found' });
    expect((await row(id)).verified).toBe(true);
  });

  it('needs --project when several projects added the domain', async () => {
    const name = uniqueDomain();
    const { project: a } = await newProject(t.app);
    const { project: b } = await newProject(t.app);
    await add(a, name);
    const idB = await add(b, name);

    const ambiguous = await runCli(['verify-domain', '--domain', name]);
    expectOneErrorLine(ambiguous, /added by 2 projects .*choose one with --project/);
    expect(ambiguous.stderr).toContain(a.id);
    expect(ambiguous.stderr).toContain(b.id);

    const chosen = await runCli(['verify-domain', '--domain', name, '--project', b.id]);
    expect(chosen.code, chosen.stderr).toBe(0);
    expect(chosen.stdout).toContain(`for project ${b.id}`);
    expect((await row(idB)).verified).toBe(true);
  });

  it('refuses a domain another project has verified, one not added, and a malformed name', async () => {
    const name = uniqueDomain();
    const { project: a } = await newProject(t.app);
    const { project: b } = await newProject(t.app);
    const idA = await add(a, name);
    const idB = await add(b, name);
    expect((await runCli(['verify-domain', '--domain', name, '--project', a.id])).code).toBe(0);

    expectOneErrorLine(await runCli(['verify-domain', '--domain', name, '--project', b.id]), new RegExp(`already verified by project ${a.id}`));
    expect((await row(idB)).verified).toBe(false);
    expect((await row(idA)).verified).toBe(true);

    expectOneErrorLine(await runCli(['verify-domain', '--domain', uniqueDomain()]), /no project has added .*POST \/domains/);
    expectOneErrorLine(await runCli(['verify-domain', '--domain', name, '--project', 'not-a-project']), /project not-a-project has not added/);
    expectOneErrorLine(await runCli(['verify-domain', '--domain', '10.0.0.1']), /--domain: An IP address/);
  });

  it('is listed by help', async () => {
    const res = await runCli(['help', 'verify-domain']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('verify-domain --domain DOMAIN [--project PROJECT_ID]');
  });
});
