import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVerp, type InboundReceiver } from '../../src/modules/bounces/index.js';
import { TEST_SECRET } from '../helpers/app.js';
import { expectOneErrorLine, runCli as runCliIn } from '../helpers/cli.js';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.js';
import { deliver, eventsOf, fixture, smtpSend, startTestReceiver } from '../modules/bounces/helpers.js';
import { createSendTestApp, newSender, type Sender, type SendTestApp } from '../modules/emails/helpers.js';

const DOMAIN = 'bounces.test';

let sink: SmtpSink;
let t: SendTestApp;
let receiver: InboundReceiver;
let s: Sender;
let dataDir: string;
beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'mailplatform-cli-feedback-'));
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, BOUNCE_DOMAIN: DOMAIN } });
  await t.runWorker();
  receiver = await startTestReceiver(t.db.db, createVerp(TEST_SECRET, DOMAIN), { maxSizeBytes: 1024 * 1024 });
  s = await newSender(t);
}, 60_000);
afterAll(async () => {
  await receiver?.close();
  await t?.close();
  await sink?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The CLI against this file's database. */
const runCli = (args: string[]) => runCliIn(args, { dataDir, env: { DATABASE_URL: t.config.databaseUrl } });
const rcpt = () => `r${randomUUID().slice(0, 8)}@recipient.example`;
const storedOf = async (emailId: string) =>
  (await sql<{ id: string }>`SELECT id FROM inbound_feedback WHERE email_id = ${emailId}::uuid ORDER BY received_at`.execute(t.db.db)).rows;
const state = async (emailId: string, contactId: string, to: string) => ({
  status: (await t.db.db.selectFrom('emails').select('status').where('id', '=', emailId).executeTakeFirstOrThrow()).status,
  bounces: (await eventsOf(t.db, contactId, 'email.bounce')).length,
  unsubscribes: (await eventsOf(t.db, contactId, 'contact.unsubscribed')).length,
  suppressed: (await t.db.db.selectFrom('suppressions').select('email').where('project_id', '=', s.project.id).where('email', '=', to).execute()).length,
  stored: (await sql<{ n: number }>`SELECT count(*)::int AS n FROM inbound_feedback`.execute(t.db.db)).rows[0]?.n,
});

describe('admin CLI: feedback-list and feedback-replay', () => {
  it('lists stored reports newest first; replaying an applied DSN changes nothing and says so', async () => {
    const d = await deliver(t, sink, s, rcpt());
    expect(await smtpSend(receiver.port, d.returnPath, fixture('rfc3464.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId }))).toMatchObject({ ok: true });
    const [stored] = await storedOf(d.emailId);
    const list = await runCli(['feedback-list', '--project', s.project.id, '--limit', '5']);
    expect(list.code, list.stderr).toBe(0);
    const first = list.stdout.split('\n')[0]?.split('\t') ?? [];
    expect(first.slice(1, 6)).toEqual([stored?.id, s.project.id, d.emailId, 'hard-bounce', 'recorded']);

    const before = await state(d.emailId, d.contactId, d.to);
    expect(before).toMatchObject({ status: 'BOUNCED', bounces: 1, unsubscribes: 1, suppressed: 1 });
    const replay = await runCli(['feedback-replay', '--id', stored?.id ?? '']);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^nothing changed: report .+ \(hard-bounce\) about email .+: already applied$/m);
    expect(await state(d.emailId, d.contactId, d.to)).toEqual(before);
  }, 60_000);

  it('a stored report not applied yet is applied once: BOUNCED, one event, suppressed; the second replay changes nothing', async () => {
    const d = await deliver(t, sink, s, rcpt());
    expect(await smtpSend(receiver.port, d.returnPath, fixture('rfc3464.eml', { verp: d.returnPath, recipient: d.to, messageId: d.messageId }))).toMatchObject({ ok: true });
    const [source] = await storedOf(d.emailId);
    // A report stored about another email, never applied to it (as when its email was not found at the time).
    const other = await deliver(t, sink, s, rcpt());
    const { rows } = await sql<{ id: string }>`
      INSERT INTO inbound_feedback (project_id, email_id, remote_address, helo, mail_from, rcpt_to, message_id, raw, raw_size, raw_truncated, kind, result, outcome)
      SELECT project_id, ${other.emailId}::uuid, remote_address, helo, mail_from, ${other.returnPath}, message_id, raw, raw_size, raw_truncated, kind, result, 'unknown-email'
      FROM inbound_feedback WHERE id = ${source?.id ?? ''}::uuid RETURNING id`.execute(t.db.db);
    const id = rows[0]?.id ?? '';
    expect(await state(other.emailId, other.contactId, other.to)).toMatchObject({ status: 'SENT', bounces: 0, suppressed: 0 });

    const applied = await runCli(['feedback-replay', '--id', id]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/^applied report .+: recorded$/m);
    const after = await state(other.emailId, other.contactId, other.to);
    expect(after).toMatchObject({ status: 'BOUNCED', bounces: 1, unsubscribes: 1, suppressed: 1 });

    const again = await runCli(['feedback-replay', '--id', id]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^nothing changed: .+: already applied$/m);
    expect(await state(other.emailId, other.contactId, other.to)).toEqual(after);
  }, 60_000);

  it('refuses an unknown id and a report that names no email of ours', async () => {
    expectOneErrorLine(await runCli(['feedback-replay', '--id', randomUUID()]), /no stored report with id/);
    expectOneErrorLine(await runCli(['feedback-replay', '--id', 'nope']), /no stored report with id nope/);
    const { rows } = await sql<{ id: string }>`
      INSERT INTO inbound_feedback (project_id, email_id, remote_address, helo, mail_from, rcpt_to, message_id, raw, raw_size, raw_truncated, kind, result, outcome)
      VALUES (${s.project.id}::uuid, NULL, '127.0.0.1', NULL, '', ${`x@${s.domain}`}, NULL, ${Buffer.from('Subject: x\r\n\r\nx')}, 14, false, 'other', '{}'::jsonb, 'ignored')
      RETURNING id`.execute(t.db.db);
    expectOneErrorLine(await runCli(['feedback-replay', '--id', rows[0]?.id ?? '']), /cannot be replayed: it names no email of ours/);
    expectOneErrorLine(await runCli(['feedback-list', '--limit', '0']), /--limit must be a whole number/);
  }, 60_000);
});
