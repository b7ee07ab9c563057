import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outbox } from '../../../src/cli/commands/outbox.js';
import { CliError } from '../../../src/cli/flags.js';
import { JobPriority } from '../../../src/jobs/queue.js';
import { createDelivery } from '../../../src/modules/emails/index.js';
import { dkimSecretBox } from '../../../src/modules/domains/dkim-keys.js';
import { enqueueEmails, markSent } from '../../../src/modules/emails/emails.repo.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { until } from '../../helpers/poll.js';
import { addVerifiedDomain, createSendTestApp, dnsResolver, jobsOf, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

let dns: TestDnsServer;
let t: SendTestApp;
let project: TestProject;
let from: string;
beforeAll(async () => {
  dns = await startDnsServer();
  t = await createSendTestApp();
  ({ project } = await newProject(t.app));
  from = `hello@${(await addVerifiedDomain(t, project.id, { dns })).domain}`;
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

const outboxOf = (emailId: string) => t.db.db.selectFrom('outbox').selectAll().where('email_id', '=', emailId).execute();
const delivery = () =>
  createDelivery({ db: t.db.db, tokens: t.deps.tokens, publicUrl: t.config.publicUrl, mail: t.deps.mail, dkimBox: dkimSecretBox(t.config.secret) });

async function runCli(argv: string[]): Promise<string[]> {
  const lines: string[] = [];
  await outbox.parse(argv)(t.db.db, (line) => lines.push(line));
  return lines;
}

describe('capture mode (no SMTP_URL)', () => {
  it('stores the signed message in the outbox and marks the email SENT', async () => {
    expect(t.deps.mail.kind).toBe('capture');
    const worker = await t.startWorker();
    try {
      const res = await send(t.app, project, { to: 'cap@example.com', from, subject: 'Captured', body: '<p>kept</p>' });
      const [id = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
      const [row] = await waitForStatus(t.db, [id], ['SENT']);
      const [captured] = await outboxOf(id);
      expect(captured).toMatchObject({ project_id: project.id, message_id: row?.message_id, envelope_from: from, envelope_to: 'cap@example.com' });
      const { results } = await dkimVerify(captured?.raw ?? Buffer.alloc(0), { resolver: dnsResolver(dns) });
      expect(results[0]?.status.result).toBe('pass');
      expect(row).toMatchObject({ attempts: 1, sent_at: expect.any(Date) });

      // Enqueued again (a campaign retry, an operator): the job finds it SENT and does nothing.
      await t.db.db.transaction().execute((trx) => enqueueEmails(trx, [id], { priority: JobPriority.transactional }));
      // Once the job is gone it has run: the outbox holds what it did.
      await until('the second job completed', async () => (await jobsOf(t.db, [id])).length === 0);
      expect(await outboxOf(id)).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });

  it('captures exactly once when two runs of one email race, and when the email is found PENDING again', async () => {
    const res = await send(t.app, project, { to: 'race@example.com', from, subject: 's', body: '<p>b</p>' });
    const [id = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
    const d = delivery();
    const job = { emailId: id, attempt: 1, maxAttempts: 10 };
    const outcomes = await Promise.all([d.deliver(job), d.deliver(job)]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(['captured', 'skipped']);
    expect(await outboxOf(id)).toHaveLength(1);

    await t.db.db.updateTable('emails').set({ status: 'PENDING' }).where('id', '=', id).execute();
    expect(await d.deliver(job)).toEqual({ kind: 'captured', duplicate: true });
    expect(await outboxOf(id)).toHaveLength(1);
    const sent = await t.db.db.selectFrom('events').select('data').where('project_id', '=', project.id).where('name', '=', 'email.sent').execute();
    expect(sent.filter((e) => e.data.emailId === id)).toHaveLength(1);
  });
});

describe('npm run admin -- outbox', () => {
  it('lists captured messages newest first, by project and limit, and prints one raw', async () => {
    const d = delivery();
    const ids: string[] = [];
    for (const to of ['l1@example.com', 'l2@example.com']) {
      const res = await send(t.app, project, { to, from, subject: `List ${to}`, body: '<p>b</p>' });
      const id = res.json<SendAnswer>().data.emails[0]?.email ?? '';
      await d.deliver({ emailId: id, attempt: 1, maxAttempts: 10 });
      ids.push(id);
    }
    const lines = await runCli(['--project', project.id, '--limit', '2']);
    expect(lines).toHaveLength(2);
    const [newest = ''] = lines;
    const cols = newest.split('\t');
    expect(cols[0]).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(cols.slice(1)).toEqual([ids[1], project.id, 'l2@example.com', 'List l2@example.com', `<${ids[1]}@${from.split('@')[1]}>`]);

    const other = await newProject(t.app);
    expect(await runCli(['--project', other.project.id])).toEqual([]);

    const raw = (await runCli(['--show', ids[0] ?? ''])).join('\n');
    expect(raw).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256/);
    expect(raw).toContain('Subject: List l1@example.com');
    expect(raw).not.toContain('\r');

    await expect(runCli(['--show', '0190a5f0-0000-7000-8000-000000000000'])).rejects.toBeInstanceOf(CliError);
    await expect(runCli(['--limit', '0'])).rejects.toThrow(/--limit/);
    await expect(runCli(['--project', 'nope'])).rejects.toThrow(/no project/);
  });
});

describe('capture of campaign mail', () => {
  it('lists the subject as sent: rendered for each recipient, not the campaign template', async () => {
    const { project: p } = await newProject(t.app);
    const sender = `news@${(await addVerifiedDomain(t, p.id, { dns })).domain}`;
    await t.db.db
      .insertInto('contacts')
      .values([
        { project_id: p.id, email: 'ada@campaign.example', subscribed: true, data: JSON.stringify({ firstName: 'Ada' }) },
        { project_id: p.id, email: 'anon@campaign.example', subscribed: true, data: JSON.stringify({}) },
      ])
      .execute();
    const create = await t.app.inject({
      method: 'POST',
      url: '/campaigns',
      headers: bearer(p.secret),
      payload: { name: 'Hello', subject: 'Hi {{firstName ?? "there"}}', body: '<p>b</p>', from: sender },
    });
    expect(create.statusCode, create.body).toBe(201);
    const id = create.json<{ data: { id: string } }>().data.id;
    const worker = await t.startWorker();
    try {
      expect((await t.app.inject({ method: 'POST', url: `/campaigns/${id}/send`, headers: bearer(p.secret), payload: {} })).statusCode).toBe(200);
      await until('both campaign emails captured', async () => (await runCli(['--project', p.id])).length >= 2, { intervalMs: 50 });
    } finally {
      await worker.stop();
    }
    const lines = (await runCli(['--project', p.id])).map((line) => line.split('\t'));
    expect(lines.map((cols) => `${cols[3]} ${cols[4]}`).sort()).toEqual(['ada@campaign.example Hi Ada', 'anon@campaign.example Hi there']);
  });
});

describe('markSent (the one-statement SENT milestone)', () => {
  it('sets sent_at and the email.sent event once, never downgrades a later status, leaves FAILED and CANCELLED alone', async () => {
    const res = await send(t.app, project, { to: ['m1@example.com', 'm2@example.com', 'm3@example.com'], from, subject: 's', body: 'b' });
    const [a = '', b = '', c = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
    expect((await markSent(t.db.db, [{ emailId: a, messageId: '<a>' }])).has(a)).toBe(true);
    const first = await t.db.db.selectFrom('emails').selectAll().where('id', '=', a).executeTakeFirstOrThrow();
    expect(first.status).toBe('SENT');
    await t.db.db.updateTable('emails').set({ status: 'DELIVERED' }).where('id', '=', a).execute();
    expect((await markSent(t.db.db, [{ emailId: a, messageId: '<a>', note: 'again' }])).has(a)).toBe(true);
    const again = await t.db.db.selectFrom('emails').selectAll().where('id', '=', a).executeTakeFirstOrThrow();
    expect(again).toMatchObject({ status: 'DELIVERED', error: 'again' });
    expect(again.sent_at?.getTime()).toBe(first.sent_at?.getTime());

    await t.db.db.updateTable('emails').set({ status: 'FAILED' }).where('id', '=', b).execute();
    await t.db.db.updateTable('emails').set({ status: 'CANCELLED' }).where('id', '=', c).execute();
    expect((await markSent(t.db.db, [{ emailId: b, messageId: '<b>' }])).has(b)).toBe(false);
    expect((await markSent(t.db.db, [{ emailId: c, messageId: '<c>' }])).has(c)).toBe(false);
    const rows = await t.db.db.selectFrom('emails').select(['id', 'status', 'sent_at']).where('id', 'in', [b, c]).execute();
    expect(rows.every((r) => r.sent_at === null && (r.status === 'FAILED' || r.status === 'CANCELLED'))).toBe(true);
    const events = await t.db.db.selectFrom('events').select('data').where('project_id', '=', project.id).where('name', '=', 'email.sent').execute();
    expect(events.filter((e) => [a, b, c].includes(String(e.data.emailId)))).toEqual([{ data: { emailId: a, messageId: '<a>' } }]);
  });
});
