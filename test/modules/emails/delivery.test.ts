import { dkimVerify } from 'mailauth';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivery, UNCONFIRMED_NOTE } from '../../../src/modules/emails/index.js';
import { dkimSecretBox } from '../../../src/modules/domains/dkim-keys.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { startDnsServer, type TestDnsServer } from '../../helpers/dns-server.js';
import { until } from '../../helpers/poll.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, dnsResolver, jobsOf, send, type SendAnswer, type SendTestApp, waitForStatus } from './helpers.js';

let sink: SmtpSink;
let dns: TestDnsServer;
let t: SendTestApp;
beforeAll(async () => {
  [sink, dns] = await Promise.all([startSmtpSink(), startDnsServer()]);
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
  await t.runWorker();
});
afterAll(async () => {
  await t?.close();
  await Promise.all([sink?.close(), dns?.close()]);
});

async function sender(): Promise<{ project: TestProject; domain: string; from: string }> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id, { dns });
  return { project, domain, from: `hello@${domain}` };
}

const idsOf = (res: { json<T>(): T }) => res.json<SendAnswer>().data.emails.map((e) => e.email);
const eventsOf = (projectId: string, name: string) =>
  t.db.db.selectFrom('events').selectAll().where('project_id', '=', projectId).where('name', '=', name).execute();
const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('delivery through SMTP_URL', () => {
  it('delivers a DKIM-signed message mailauth verifies, with text part, inline image, attachment and headers; marks it SENT once', async () => {
    const { project, domain, from } = await sender();
    const res = await send(t.app, project, {
      to: { name: 'Ada', email: 'ada@example.com' },
      from: { name: 'Hello Team', email: from },
      reply: 'support@example.com',
      subject: 'Welcome {{name}}',
      body: '<html><body><h1>Hi {{name}}</h1><p>See <a href="https://example.com/docs">the docs</a>.</p><img src="cid:logo@mail"></body></html>',
      data: { name: 'Ada' },
      headers: { 'X-Order': '42' },
      attachments: [
        { filename: 'logo.png', content: png.toString('base64'), contentType: 'image/png', cid: 'logo@mail' },
        { filename: 'invoice.txt', content: Buffer.from('total: 42').toString('base64'), contentType: 'text/plain' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const [id = ''] = idsOf(res);
    const [row] = await waitForStatus(t.db, [id], ['SENT']);
    expect(row).toMatchObject({ attempts: 1, error: null, sent_at: expect.any(Date) });

    const delivered = sink.messagesTo('ada@example.com');
    expect(delivered).toHaveLength(1);
    const raw = delivered[0]?.raw ?? Buffer.alloc(0);
    expect(delivered[0]?.from).toBe(from);
    const { results } = await dkimVerify(raw, { resolver: dnsResolver(dns) });
    expect(results[0]?.status.result, JSON.stringify(results[0]?.status)).toBe('pass');
    expect(results[0]?.signingDomain).toBe(domain);

    const parsed = await simpleParser(raw);
    expect(parsed.messageId).toBe(row?.message_id);
    expect(parsed.messageId).toBe(`<${id}@${domain}>`);
    expect(parsed.subject).toBe('Welcome Ada');
    expect(parsed.from?.value[0]).toEqual({ address: from, name: 'Hello Team' });
    expect(parsed.replyTo?.value[0]?.address).toBe('support@example.com');
    expect(parsed.headers.get('x-order')).toBe('42');
    expect(parsed.text).toContain('HI ADA');
    // Tracking is on by default: links in both parts go through the click redirect.
    expect(parsed.text).toMatch(/the docs\s+\[http:\/\/localhost:8080\/t\/c\/[\w-]+\.[\w-]+\]/);
    expect(String(parsed.html)).toMatch(/<img src="http:\/\/localhost:8080\/t\/o\/[\w-]+\.[\w-]+" width="1" height="1"/);
    expect(parsed.attachments.find((a) => a.filename === 'logo.png')).toMatchObject({ contentId: '<logo@mail>', related: true });
    expect(parsed.attachments.find((a) => a.filename === 'logo.png')?.content.equals(png)).toBe(true);
    expect(parsed.attachments.find((a) => a.filename === 'invoice.txt')?.content.toString()).toBe('total: 42');
    expect(raw.toString()).not.toMatch(/^List-Unsubscribe/im);

    expect(await eventsOf(project.id, 'email.sent')).toEqual([expect.objectContaining({ contact_id: row?.contact_id, data: { emailId: id, messageId: row?.message_id } })]);
    expect(await jobsOf(t.db, [id])).toEqual([]);
  });

  it('retries a 4xx reply with backoff and then delivers once', async () => {
    const { project, from } = await sender();
    sink.reject('later@example.com', { code: 451, message: '4.7.1 Greylisted, come back later', times: 1 });
    const [id = ''] = idsOf(await send(t.app, project, { to: 'later@example.com', from, subject: 's', body: '<p>b</p>' }));
    await until('the first attempt', () => sink.attempts('later@example.com') > 0);
    const [waiting] = await waitForStatus(t.db, [id], ['PENDING']);
    expect(waiting?.error).toMatch(/451 4\.7\.1 Greylisted/);
    const [row] = await waitForStatus(t.db, [id], ['SENT'], 20_000);
    expect(row).toMatchObject({ attempts: 2, error: null });
    expect(sink.attempts('later@example.com')).toBe(2);
    expect(sink.messagesTo('later@example.com')).toHaveLength(1);
  });

  it('marks a 5xx reply FAILED with the reply and does not retry', async () => {
    const { project, from } = await sender();
    sink.reject('gone@example.com', { code: 550, message: '5.1.1 No such mailbox' });
    const [id = ''] = idsOf(await send(t.app, project, { to: 'gone@example.com', from, subject: 's', body: '<p>b</p>' }));
    const [row] = await waitForStatus(t.db, [id], ['FAILED']);
    expect(row).toMatchObject({ error: expect.stringMatching(/550 5\.1\.1 No such mailbox/), failed_at: expect.any(Date), sent_at: null, attempts: 1 });
    // Its job gone (completed, not rescheduled): no retry can come any more.
    await until('the send job completed', async () => (await jobsOf(t.db, [id])).length === 0);
    expect(sink.attempts('gone@example.com')).toBe(1);
    expect(await eventsOf(project.id, 'email.sent')).toEqual([]);
  });

  it('delivers TRANSACTIONAL mail to an unsubscribed contact, never MARKETING mail; marketing mail carries one-click unsubscribe', async () => {
    const { project, from } = await sender();
    const [marketing, transactional] = await t.db.db
      .insertInto('templates')
      .values([
        { project_id: project.id, subject: 'News', body: '<p>news</p>', from_email: from, type: 'MARKETING' },
        { project_id: project.id, subject: 'Receipt', body: '<p>receipt</p>', from_email: from, type: 'TRANSACTIONAL' },
      ])
      .returning('id')
      .execute();
    const [news = ''] = idsOf(await send(t.app, project, { to: 'unsub@example.com', template: marketing?.id }));
    const [receipt = ''] = idsOf(await send(t.app, project, { to: 'unsub@example.com', template: transactional?.id }));
    const [subscribedNews = ''] = idsOf(await send(t.app, project, { to: 'fan@example.com', template: marketing?.id, subscribed: true }));
    await waitForStatus(t.db, [receipt, subscribedNews], ['SENT']);
    const [cancelled] = await waitForStatus(t.db, [news], ['CANCELLED']);
    expect(cancelled?.sent_at).toBeNull();
    expect(sink.messagesTo('unsub@example.com').map((m) => m.messageId)).toEqual([`<${receipt}@${from.split('@')[1]}>`]);

    const fanRaw = sink.messagesTo('fan@example.com')[0]?.raw ?? Buffer.alloc(0);
    const fan = await simpleParser(fanRaw);
    expect(fanRaw.toString()).toMatch(/^List-Unsubscribe: <http:\/\/localhost:8080\/unsubscribe\/[\w-]+\.[\w-]+>\r$/m);
    expect(fanRaw.toString()).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r$/m);
    expect(String(fan.html)).toMatch(/Unsubscribe<\/a>/);
    const { results } = await dkimVerify(fanRaw, { resolver: dnsResolver(dns) });
    expect(results[0]?.status.result).toBe('pass');
    expect(results[0]?.status.comment ?? '').not.toMatch(/list-unsubscribe/i);
  });

  it('does not send again when the worker died after the relay accepted: the re-run marks it SENT once, unconfirmed', async () => {
    await t.withWorkerStopped(async () => {
      const { project, from } = await sender();
      const [id = ''] = idsOf(await send(t.app, project, { to: 'once@example.com', from, subject: 's', body: '<p>b</p>' }));
      const delivery = createDelivery({ db: t.db.db, tokens: t.deps.tokens, publicUrl: t.config.publicUrl, mail: t.deps.mail, dkimBox: dkimSecretBox(t.config.secret) });
      const died = new Error('worker killed after the 250');
      await expect(
        delivery.deliver({ emailId: id, attempt: 1, maxAttempts: 10 }, { afterRelayAccepted: () => Promise.reject(died) }),
      ).rejects.toBe(died);
      expect(sink.messagesTo('once@example.com')).toHaveLength(1);
      await waitForStatus(t.db, [id], ['SENDING']);
      expect(await jobsOf(t.db, [id])).toHaveLength(1);

      // The job is still queued, as after its lock expired: the next worker runs it.
      await t.runWorker();
      const [row] = await waitForStatus(t.db, [id], ['SENT']);
      expect(row).toMatchObject({ error: UNCONFIRMED_NOTE, unconfirmed: true, attempts: 1, sent_at: expect.any(Date) });
      // Its job gone: nothing can send it again any more.
      await until('the send job completed', async () => (await jobsOf(t.db, [id])).length === 0);
      expect(sink.messagesTo('once@example.com')).toHaveLength(1);
      expect(await eventsOf(project.id, 'email.sent')).toHaveLength(1);
    });
  });

  it('gives up on a transient failure at the last attempt: FAILED with the reply, no retry', async () => {
    await t.withWorkerStopped(async () => {
      const { project, from } = await sender();
      sink.reject('busy@example.com', { code: 421, message: '4.3.2 Service shutting down' });
      const [id = ''] = idsOf(await send(t.app, project, { to: 'busy@example.com', from, subject: 's', body: '<p>b</p>' }));
      const delivery = createDelivery({ db: t.db.db, tokens: t.deps.tokens, publicUrl: t.config.publicUrl, mail: t.deps.mail, dkimBox: dkimSecretBox(t.config.secret) });
      await expect(delivery.deliver({ emailId: id, attempt: 9, maxAttempts: 10 })).rejects.toThrow(/421 4\.3\.2/);
      expect((await waitForStatus(t.db, [id], ['PENDING']))[0]?.error).toMatch(/421/);
      const outcome = await delivery.deliver({ emailId: id, attempt: 10, maxAttempts: 10 });
      expect(outcome).toMatchObject({ kind: 'failed', error: expect.stringMatching(/^Gave up after 10 attempts: 421 4\.3\.2/) });
      expect((await waitForStatus(t.db, [id], ['FAILED']))[0]).toMatchObject({ attempts: 2, failed_at: expect.any(Date) });
      sink.reject('busy@example.com', { code: 421, times: 0 });
    });
  });

  it('fails an email whose sender domain lost its verification before delivery, without contacting the relay', async () => {
    let id = '';
    await t.withWorkerStopped(async () => {
      const { project, domain, from } = await sender();
      [id = ''] = idsOf(await send(t.app, project, { to: 'late@example.com', from, subject: 's', body: '<p>b</p>' }));
      await t.db.db.updateTable('domains').set({ verified: false }).where('domain', '=', domain).execute();
    });
    const [row] = await waitForStatus(t.db, [id], ['FAILED']);
    expect(row?.error).toMatch(/no longer verified/);
    expect(sink.attempts('late@example.com')).toBe(0);
  });
});
