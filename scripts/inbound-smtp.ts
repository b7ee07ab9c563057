/**
 * Sends a test message to the inbound SMTP receiver (docs/bounces.md "Testing the receiver"):
 *
 *   node --import tsx scripts/inbound-smtp.ts verp EMAIL_ID
 *       prints the VERP address of an email (SECRET, DATA_DIR and BOUNCE_DOMAIN read as the server reads them)
 *   node --import tsx scripts/inbound-smtp.ts dsn EMAIL_ID [--status 5.1.1] [--server HOST:PORT]
 *       sends an RFC 3464 bounce about the email to its VERP address, from the null sender
 *   node --import tsx scripts/inbound-smtp.ts message TO FROM [--subject S] [--in-reply-to MSGID] [--server HOST:PORT]
 *       sends a plain message (a reply when --in-reply-to names one of our Message-IDs)
 *
 * --server defaults to 127.0.0.1:$INBOUND_SMTP_PORT. Prints the receiver's answer; exit 1 when refused.
 */
import { randomUUID } from 'node:crypto';
import nodemailer from 'nodemailer';
import { createVerp } from '../src/modules/bounces/verp.js';
import { loadConfig } from '../src/config.js';

const [command, ...rest] = process.argv.slice(2);
const flags = new Map<string, string>();
const args: string[] = [];
for (let i = 0; i < rest.length; i++) {
  const a = rest[i] ?? '';
  if (a.startsWith('--')) flags.set(a.slice(2), rest[++i] ?? '');
  else args.push(a);
}

function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

/** The server's own configuration (SECRET from the environment, or the one generated in DATA_DIR by `npm start`). */
function verpOf(emailId: string): string {
  const config = loadConfig();
  if (!config.bounceDomain) fail('BOUNCE_DOMAIN must be set as for the server');
  return createVerp(config.secret, config.bounceDomain).address(emailId);
}

async function send(envelope: { from: string; to: string }, raw: string): Promise<void> {
  const [host = '127.0.0.1', port = process.env.INBOUND_SMTP_PORT ?? '25'] = (flags.get('server') ?? '').split(':').filter(Boolean);
  const transport = nodemailer.createTransport({ host, port: Number(port), secure: false, ignoreTLS: true });
  try {
    const info: { response: string } = await transport.sendMail({ envelope, raw });
    process.stdout.write(`${info.response}\n`);
  } catch (err) {
    fail((err as { response?: string; message: string }).response ?? (err as Error).message);
  } finally {
    transport.close();
  }
}

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

if (command === 'verp' && args[0]) {
  process.stdout.write(`${verpOf(args[0])}\n`);
} else if (command === 'dsn' && args[0]) {
  const to = verpOf(args[0]);
  const status = flags.get('status') ?? '5.1.1';
  const boundary = `b${randomUUID()}`;
  await send({ from: '', to }, crlf([
    'From: Mail Delivery System <MAILER-DAEMON@test.invalid>',
    `To: ${to}`,
    'Subject: Undelivered Mail Returned to Sender',
    `Message-ID: <dsn-${randomUUID()}@test.invalid>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain',
    '',
    'Your message could not be delivered.',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; test.invalid',
    '',
    'Final-Recipient: rfc822; recipient@test.invalid',
    `Action: ${status.startsWith('4') ? 'delayed' : 'failed'}`,
    `Status: ${status}`,
    `Diagnostic-Code: smtp; ${status.startsWith('4') ? '452' : '550'} ${status} test bounce`,
    `--${boundary}--`,
  ]));
} else if (command === 'message' && args[0] && args[1]) {
  const [to, from] = args as [string, string];
  const inReplyTo = flags.get('in-reply-to');
  await send({ from, to }, crlf([
    `From: ${from}`,
    `To: ${to}`,
    `Subject: ${flags.get('subject') ?? 'Test message'}`,
    `Message-ID: <msg-${randomUUID()}@test.invalid>`,
    ...(inReplyTo ? [`In-Reply-To: ${inReplyTo}`, `References: ${inReplyTo}`] : []),
    'Content-Type: text/plain; charset=utf-8',
    '',
    'A test message for the inbound receiver.',
  ]));
} else {
  fail('usage: inbound-smtp.ts verp EMAIL_ID | dsn EMAIL_ID [--status X.Y.Z] [--server HOST:PORT] | message TO FROM [--subject S] [--in-reply-to MSGID] [--server HOST:PORT]');
}
