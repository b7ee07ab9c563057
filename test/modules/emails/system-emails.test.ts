import { randomUUID } from 'node:crypto';
import { dkimVerify } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outbox } from '../../../src/cli/commands/outbox.js';
import { INSTANCE_PROJECT_ID } from '../../../src/db/schema.js';
import { JobPriority } from '../../../src/jobs/queue.js';
import { queueSystemEmail } from '../../../src/modules/emails/index.js';
import { newProject } from '../../helpers/accounts.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { startSmtpSink, type SmtpSink } from '../../helpers/smtp-sink.js';
import { until } from '../../helpers/poll.js';
import { addVerifiedDomain, createSendTestApp, dnsResolver, jobsOf, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

/** One SYSTEM_FROM domain for the whole file: configureSystemEmail is per process, and both apps set it the same. */
const systemDomain = `sys${randomUUID().slice(0, 8)}.example`;
const SYSTEM_FROM = `no-reply@${systemDomain}`;

let dns: TestDnsServer;
let t: SendTestApp;
beforeAll(async () => {
  dns = await startDnsServer();
  t = await createSendTestApp({ env: { SYSTEM_FROM } });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

const queue = (to: string, kind = 'verify-email', projectId: string | null = null) =>
  queueSystemEmail(t.db.db, { to, subject: `Subject for ${to}`, text: `Hello ${to}\n\nOpen https://example.test/app/x?token=abc`, kind, projectId });

async function cliLines(argv: string[]): Promise<string[]> {
  const lines: string[] = [];
  await outbox.parse(argv)(t.db.db, (line) => lines.push(line));
  return lines;
}

describe('queueSystemEmail (capture mode: no SMTP_URL)', () => {
  it('is captured in the outbox in no project (the instance mail\'s row), from SYSTEM_FROM, with its own text part, listed by `outbox --system`', async () => {
    const { project } = await newProject(t.app);
    const { id } = await queue('capture-sys@example.com', 'project-disabled', project.id);
    const [job] = await jobsOf(t.db, [id]);
    expect(job).toMatchObject({ task: 'send-email', priority: JobPriority.system, max_attempts: 10 });
    await t.runWorker();
    const [row] = await waitForStatus(t.db, [id], ['SENT']);
    expect(row).toMatchObject({ project_id: INSTANCE_PROJECT_ID, source: 'SYSTEM', system_kind: 'project-disabled', system_project_id: project.id, from_email: SYSTEM_FROM });
    const captured = await t.db.db.selectFrom('outbox').selectAll().where('email_id', '=', id).executeTakeFirstOrThrow();
    expect(captured).toMatchObject({ project_id: INSTANCE_PROJECT_ID, envelope_from: SYSTEM_FROM, envelope_to: 'capture-sys@example.com' });
    const raw = captured.raw.toString('utf8');
    expect(raw).toContain(`From: ${SYSTEM_FROM}`);
    expect(raw).toContain('Content-Type: text/plain');
    expect(raw).toContain('Hello capture-sys@example.com');
    // Never tracked: no open pixel, no rewritten link.
    expect(raw).not.toContain('/t/o/');
    expect(raw).toContain('https://example.test/app/x?token=abc');

    const lines = await cliLines(['--system']);
    expect(lines.some((l) => l.split('\t')[1] === id && l.split('\t')[2] === 'system')).toBe(true);
    // It is no project's email: the project's own listing and GET /emails/:id do not have it.
    expect((await cliLines(['--project', project.id])).some((l) => l.includes(id))).toBe(false);
    const api = await t.app.inject({ method: 'GET', url: `/emails/${id}`, headers: { authorization: `Bearer ${project.secret}` } });
    expect(api.statusCode).toBe(404);
  });

  it('commits with the caller: queued in a rolled-back transaction, nothing exists', async () => {
    let id = '';
    await expect(
      t.db.db.transaction().execute(async (trx) => {
        ({ id } = await queueSystemEmail(trx, { to: 'rollback@example.com', subject: 's', text: 't', kind: 'invitation' }));
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(id).not.toBe('');
    expect(await t.db.db.selectFrom('emails').select('id').where('id', '=', id).execute()).toEqual([]);
    expect(await jobsOf(t.db, [id])).toEqual([]);
  });

  it('is DKIM-signed once SYSTEM_FROM\'s domain is verified by a project, unsigned before', async () => {
    const before = await queue('unsigned@example.com');
    const [unsigned] = await waitForStatus(t.db, [before.id], ['SENT']);
    expect(unsigned?.status).toBe('SENT');
    const rawBefore = (await t.db.db.selectFrom('outbox').select('raw').where('email_id', '=', before.id).executeTakeFirstOrThrow()).raw;
    expect(rawBefore.toString('utf8')).not.toContain('DKIM-Signature');

    const { project: operator } = await newProject(t.app);
    await addVerifiedDomain(t, operator.id, { domain: systemDomain, dns });
    const after = await queue('signed@example.com');
    await waitForStatus(t.db, [after.id], ['SENT']);
    const raw = (await t.db.db.selectFrom('outbox').select('raw').where('email_id', '=', after.id).executeTakeFirstOrThrow()).raw;
    const { results } = await dkimVerify(raw, { resolver: dnsResolver(dns) });
    expect(results[0]?.signingDomain).toBe(systemDomain);
    expect(results[0]?.status.result).toBe('pass');
  });

  it('runs ahead of transactional mail queued before it', async () => {
    const sender = await newSender(t);
    let transactional: string[] = [];
    let system = '';
    await t.withWorkerStopped(async () => {
      const res = await send(t.app, sender.project, { to: ['a1@example.com', 'a2@example.com', 'a3@example.com'], from: sender.from, subject: 's', body: '<p>b</p>' });
      expect(res.statusCode, res.body).toBe(200);
      transactional = res.json<SendAnswer>().data.emails.map((e) => e.email);
      ({ id: system } = await queue('first@example.com'));
      // One job at a time, so the order of capture is the order the queue hands them out.
      const runner = await t.startWorker({ concurrency: 1 });
      try {
        await waitForStatus(t.db, [...transactional, system], ['SENT']);
      } finally {
        await runner.stop();
      }
    });
    const rows = await t.db.db.selectFrom('outbox').select(['email_id', 'id']).where('email_id', 'in', [...transactional, system]).orderBy('id').execute();
    expect(rows[0]?.email_id).toBe(system);
  });
});

describe('queueSystemEmail with SMTP_URL', () => {
  let sink: SmtpSink;
  let s: SendTestApp;
  beforeAll(async () => {
    sink = await startSmtpSink();
    s = await createSendTestApp({ env: { SYSTEM_FROM, SMTP_URL: sink.url } });
  });
  afterAll(async () => {
    await s?.close();
    await sink?.close();
  });

  it('is relayed through SMTP_URL (the same delivery as every email)', async () => {
    const { id } = await queueSystemEmail(s.db.db, { to: 'relayed@example.com', subject: 'Relayed', text: 'Plain words', kind: 'password-reset' });
    await s.runWorker();
    await until('the sink got it', () => sink.messagesTo('relayed@example.com').length === 1);
    const [msg] = sink.messagesTo('relayed@example.com');
    expect(msg?.from).toBe(SYSTEM_FROM);
    expect(msg?.messageId).toBe(`<${id}@${systemDomain}>`);
    const [row] = await waitForStatus(s.db, [id], ['SENT']);
    expect(row?.attempts).toBe(1);
  });
});
