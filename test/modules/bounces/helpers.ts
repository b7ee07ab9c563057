import { readFileSync } from 'node:fs';
import type { Kysely } from 'kysely';
import nodemailer from 'nodemailer';
import pino from 'pino';
import type { Db } from '../../../src/db/connection.js';
import type { Database } from '../../../src/db/schema.js';
import { type InboundReceiver, type ReceiverOptions, startInboundReceiver, type Verp } from '../../../src/modules/bounces/index.js';
import { type SmtpSink } from '../../helpers/smtp-sink.js';
import type { Sender, SendTestApp } from '../emails/helpers.js';
import { send, type SendAnswer, waitForStatus } from '../emails/helpers.js';

/** A fixture of test/fixtures/bounces with its placeholders filled, CRLF line ends. */
export function fixture(name: string, vars: { verp: string; recipient: string; messageId: string; reportId?: string }): Buffer {
  const text = readFileSync(new URL(`../../fixtures/bounces/${name}`, import.meta.url), 'utf8')
    .replaceAll('{{VERP}}', vars.verp)
    .replaceAll('{{RECIPIENT}}', vars.recipient)
    .replaceAll('{{LOCAL}}', vars.recipient.split('@')[0] ?? '')
    .replaceAll('{{MESSAGE_ID}}', vars.messageId)
    .replaceAll('{{REPORT_ID}}', vars.reportId ?? `r${Math.random().toString(36).slice(2)}`);
  return Buffer.from(text.replace(/\r?\n/g, '\r\n'));
}

export interface SmtpAnswer {
  ok: boolean;
  code?: number;
  response: string;
}

/** Sends raw bytes over SMTP (nodemailer's client) from the null sender, as an MTA sends a DSN. */
export async function smtpSend(port: number, to: string | string[], raw: Buffer, opts: { tls?: boolean } = {}): Promise<SmtpAnswer> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ...(opts.tls ? { requireTLS: true, tls: { rejectUnauthorized: false } } : { ignoreTLS: true }),
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
  });
  try {
    const info: { response: string } = await transport.sendMail({ envelope: { from: '', to: Array.isArray(to) ? to : [to] }, raw });
    return { ok: true, response: info.response };
  } catch (err) {
    const e = err as { responseCode?: number; response?: string; message: string };
    return { ok: false, code: e.responseCode, response: e.response ?? e.message };
  } finally {
    transport.close();
  }
}

export interface Delivered {
  emailId: string;
  contactId: string;
  messageId: string;
  /** The envelope sender the relay (sink) received. */
  returnPath: string;
  to: string;
}

/** Sends one email through /v1/send and waits for the sink to receive it. */
export async function deliver(t: SendTestApp, sink: SmtpSink, sender: Sender, to: string): Promise<Delivered> {
  const res = await send(t.app, sender.project, { to, from: sender.from, subject: 'Welcome', body: '<p>Hello</p>', subscribed: true });
  if (res.statusCode !== 200) throw new Error(`send answered ${res.statusCode}: ${res.body}`);
  const answer = res.json<SendAnswer>().data.emails[0];
  if (!answer) throw new Error('no email');
  const [row] = await waitForStatus(t.db, [answer.email], ['SENT']);
  const msg = sink.messagesTo(to).at(-1);
  if (!row || !msg) throw new Error('not delivered');
  return { emailId: answer.email, contactId: answer.contact.id, messageId: row.message_id ?? '', returnPath: msg.from, to };
}

export async function eventsOf(db: Db, contactId: string, name: string) {
  return db.db.selectFrom('events').select(['name', 'data']).where('contact_id', '=', contactId).where('name', '=', name).execute();
}

/** The inbound receiver on a free loopback port, limits out of the way; `opts` override any option. */
export const startTestReceiver = (db: Kysely<Database>, verp: Verp, opts: Partial<ReceiverOptions> = {}): Promise<InboundReceiver> =>
  startInboundReceiver({
    db,
    verp,
    log: pino({ level: 'silent' }),
    port: 0,
    host: '127.0.0.1',
    maxSizeBytes: 1024 * 1024,
    messagesPerMinute: 1_000_000,
    connectionsPerMinute: 1_000_000,
    autoDisable: true,
    ...opts,
  });
