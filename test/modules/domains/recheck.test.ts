import { sql } from 'kysely';
import { randomBytes } from 'node:crypto';
import { parseCrontab, type Runner } from 'graphile-worker';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRONTAB, Tasks } from '../../../src/jobs/index.js';
import { createDns } from '../../../src/lib/dns.js';
import { markVerifiedByOperator, writeChecks } from '../../../src/modules/domains/domains.repo.js';
import { recheckDomains } from '../../../src/modules/domains/domains.service.js';
import { startWorker } from '../../../src/worker.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { sleep } from '../../helpers/process.js';

interface ApiDomain {
  id: string;
  domain: string;
  verified: boolean;
  records: { name: string; value: string; purpose: string; verified: boolean; error?: string }[];
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

const uniqueDomain = () => `r-${randomBytes(5).toString('hex')}.example.com`;

async function added(project: TestProject, domain = uniqueDomain()): Promise<ApiDomain> {
  const res = await t.app.inject({ method: 'POST', url: '/domains', headers: bearer(project.secret), payload: { domain } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<ApiDomain>();
}

function dkimOf(domain: ApiDomain) {
  const dkim = domain.records.find((r) => r.purpose === 'DKIM');
  if (!dkim) throw new Error('no DKIM record');
  return dkim;
}

const publish = (domain: ApiDomain, value = dkimOf(domain).value) => dns.set(dkimOf(domain).name, { TXT: [value] });

const row = async (id: string) => t.db.db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

const dkimError = async (id: string) => (await row(id)).records.find((r) => r.purpose === 'DKIM')?.error;

/** The cron's work, kept to one project: other test files share this database. */
const recheck = (projectId: string, deps: Pick<TestApp['deps'], 'db' | 'dns'> = t.deps) => recheckDomains(deps, { projectIds: [projectId] });

/** A verified domain of a fresh project, verified through DNS. */
async function verifiedDomain(): Promise<{ project: TestProject; domain: ApiDomain }> {
  const { project } = await newProject(t.app);
  const domain = await added(project);
  publish(domain);
  const res = await t.app.inject({ method: 'GET', url: `/domains/${domain.id}/verify`, headers: bearer(project.secret) });
  expect(res.json<ApiDomain>().verified, res.body).toBe(true);
  return { project, domain };
}

describe('background re-check of domains', () => {
  it('verifies pending domains whose record appeared and leaves the others pending', async () => {
    const { project } = await newProject(t.app);
    const published = await added(project);
    const absent = await added(project);
    publish(published);
    const summary = await recheck(project.id);
    expect(summary).toMatchObject({ checked: 2, verified: 1, unverified: 0, conflicts: 0 });
    expect(await row(published.id)).toMatchObject({ verified: true, verified_at: expect.any(Date), last_checked_at: expect.any(Date) });
    expect(await row(absent.id)).toMatchObject({ verified: false, last_checked_at: expect.any(Date) });
    expect(await dkimError(absent.id)).toBe('record not found');
  });

  it('un-verifies a domain whose DKIM record disappeared', async () => {
    const { project, domain } = await verifiedDomain();
    dns.remove(dkimOf(domain).name);
    const lines: [string, Record<string, unknown>][] = [];
    const summary = await recheckDomains(t.deps, { projectIds: [project.id], log: (message, meta) => lines.push([message, meta]) });
    expect(summary).toMatchObject({ checked: 1, unverified: 1 });
    expect(lines).toEqual([
      [`domain ${domain.domain} no longer verified: DKIM record not found`, expect.objectContaining({ domainId: domain.id, projectId: project.id })],
    ]);
    expect(await row(domain.id)).toMatchObject({ verified: false, verified_at: null });
    expect(await dkimError(domain.id)).toBe('record not found');
  });

  it('un-verifies a domain whose DKIM record changed', async () => {
    const { project, domain } = await verifiedDomain();
    publish(domain, 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAsomethingelse');
    expect(await recheck(project.id)).toMatchObject({ unverified: 1 });
    expect((await row(domain.id)).verified).toBe(false);
    expect(await dkimError(domain.id)).toBe('value does not match');
  });

  it('keeps a domain verified when the lookup times out, and says so on the record', async () => {
    const { project, domain } = await verifiedDomain();
    const before = await row(domain.id);
    dns.blackhole(dkimOf(domain).name);
    const fastDns = createDns({ servers: [dns.address], timeoutMs: 200, tries: 1 });
    const summary = await recheck(project.id, { db: t.deps.db, dns: fastDns });
    expect(summary).toMatchObject({ checked: 1, verified: 0, unverified: 0 });
    const after = await row(domain.id);
    expect(after).toMatchObject({ verified: true, verified_at: before.verified_at });
    expect(after.last_checked_at?.getTime()).toBeGreaterThan(before.last_checked_at?.getTime() ?? 0);
    expect(await dkimError(domain.id)).toBe('lookup timed out');
  });

  it('works through many domains in bounded batches', async () => {
    const { project } = await newProject(t.app);
    const domains = await Promise.all(Array.from({ length: 5 }, () => added(project)));
    for (const d of domains) publish(d);
    const summary = await recheckDomains(t.deps, { projectIds: [project.id], batchSize: 2, concurrency: 2 });
    expect(summary).toMatchObject({ checked: 5, verified: 5 });
  });

  it('verifies only the oldest of two projects publishing the same domain, without failing', async () => {
    const name = uniqueDomain();
    const first = await newProject(t.app);
    const second = await newProject(t.app);
    const older = await added(first.project, name);
    const newer = await added(second.project, name);
    publish(older);
    dns.set(dkimOf(newer).name, { TXT: [dkimOf(newer).value] });
    // Both in one batch (one statement): the older claim is tried, the newer reports the conflict.
    const both = await recheckDomains(t.deps, { projectIds: [first.project.id, second.project.id] });
    expect(both).toMatchObject({ checked: 2, verified: 1, conflicts: 1 });
    expect((await row(older.id)).verified).toBe(true);
    expect((await row(newer.id)).verified).toBe(false);
    expect(await dkimError(newer.id)).toMatch(/another project/);
    // Still refused on the next runs, but logged once.
    const lines: string[] = [];
    const again = await recheckDomains(t.deps, { projectIds: [second.project.id], log: (message) => lines.push(message) });
    expect(again).toMatchObject({ conflicts: 1, verified: 0 });
    expect(lines).toEqual([]);
    expect((await row(newer.id)).verified).toBe(false);
  });

  it('leaves domains an operator verified without DNS alone', async () => {
    const { project } = await newProject(t.app);
    const domain = await added(project);
    await markVerifiedByOperator(t.db.db, domain.id, domain.domain);
    expect(await recheck(project.id)).toMatchObject({ checked: 0 });
    expect(await row(domain.id)).toMatchObject({ verified: true, last_checked_at: null });
  });

  it('loses a verification race to a concurrent transaction without an error (unique index retry)', async () => {
    const name = uniqueDomain();
    const a = await added((await newProject(t.app)).project, name);
    const b = await added((await newProject(t.app)).project, name);
    const records = (await row(b.id)).records;
    let release: () => void = () => undefined;
    let updated: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const aUpdated = new Promise<void>((resolve) => (updated = resolve));
    // A verifies inside an open transaction: B's statement sees no verified row and must wait on the index.
    const competitor = t.db.db.transaction().execute(async (trx) => {
      await trx.updateTable('domains').set({ verified: true }).where('id', '=', a.id).execute();
      updated();
      await held;
    });
    await aUpdated;
    const writing = writeChecks(t.db.db, [{ id: b.id, records, action: 'verify', checked: true }]);
    // Release A only once B's statement is waiting on A's lock (polled, bounded).
    for (let i = 0; i < 200; i++) {
      const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.execute(t.db.db);
      if ((rows[0]?.n ?? 0) > 0) break;
      await sleep(10);
    }
    release();
    await competitor;
    const [written] = await writing;
    expect(written).toMatchObject({ id: b.id, verified: false });
    expect((await row(a.id)).verified).toBe(true);
  });
});

describe('domains-recheck task', () => {
  it('is scheduled every 5 minutes, one run at a time', () => {
    const items = parseCrontab(CRONTAB).filter((item) => item.task === Tasks.domainsRecheck);
    expect(items).toHaveLength(1);
    expect(items[0]?.options).toMatchObject({ queueName: Tasks.domainsRecheck, maxAttempts: 1 });
    expect(CRONTAB).toMatch(new RegExp(`^\\*/5 \\* \\* \\* \\* ${Tasks.domainsRecheck} `, 'm'));
  });

  it('runs in the worker for one project when its payload names it', async () => {
    const { project } = await newProject(t.app);
    const domain = await added(project);
    publish(domain);
    let runner: Runner | undefined;
    try {
      runner = await startWorker({ pool: t.db.pool, deps: t.deps, log: pino({ level: 'silent' }), cron: false, concurrency: 1 });
      await runner.addJob(Tasks.domainsRecheck, { projectIds: [project.id] });
      const deadline = Date.now() + 15_000;
      while (!(await row(domain.id)).verified) {
        if (Date.now() > deadline) throw new Error('domain not verified by the worker within 15 s');
        await sleep(100);
      }
    } finally {
      await runner?.stop();
    }
  });
});
