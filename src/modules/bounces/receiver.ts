import type { Kysely } from 'kysely';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import type { Database } from '../../db/schema.js';
import { GroupCommit } from '../../lib/group-commit.js';
import { findInboundDomain } from '../domains/index.js';
import type { Logger, Outcome } from './feedback.service.js';
import { MAX_READ_BYTES } from './inbound.repo.js';
import { applyReceivedIn, type ClassifiedMessage, classifyReceived } from './inbound.service.js';
import type { AttachmentStoring } from './inbound-mail.attachments.js';
import { type InboundMailOutcome, processInboundMail } from './inbound-mail.service.js';
import { clientKey, windowCounter } from './rate-limit.js';
import type { Verp } from './verp.js';

/**
 * The inbound SMTP receiver (docs/bounces.md): an SMTP server (smtp-server) that accepts mail
 * only for VERP addresses of the bounce domain whose signature verifies, and for any address of
 * a project's verified domain with inbound mail enabled (or of its subdomains); nothing else (no
 * relay). Reports (DSN, ARF, prose bounce, auto-reply) at VERP addresses go through the shared
 * feedback path; mail for inbound domains becomes email.received events (inbound-mail.service.ts);
 * both before answering 250.
 */
export interface ReceiverOptions {
  db: Kysely<Database>;
  verp: Verp;
  log: Logger & { error(obj: object, msg: string): void; debug(obj: object, msg: string): void };
  port: number;
  host: string;
  /** STARTTLS with this certificate; undefined: plain SMTP only. */
  tls?: { key: Buffer; cert: Buffer };
  maxSizeBytes: number;
  /** Messages (MAIL FROM) per remote address per minute. */
  messagesPerMinute: number;
  /** Connections per remote address per minute. */
  connectionsPerMinute: number;
  /** Connections open at once per remote address. Default 10. */
  maxConnectionsPerAddress?: number;
  autoDisable: boolean;
  /** INBOUND_STORE_ATTACHMENTS: received mail's attachments stored (docs/bounces.md "Attachments"); undefined: metadata only. */
  attachments?: AttachmentStoring;
}

/** The accepted inbound-domain recipients of the current transaction (a new envelope per MAIL FROM). */
const inboundRecipients = new WeakMap<object, { address: string; projectId: string }[]>();

export interface InboundReceiver {
  readonly port: number;
  close(): Promise<void>;
}

/** Recipients of one message: a DSN has one; more are refused with 452 (the sender retries them later). */
const MAX_RECIPIENTS = 10;

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

export async function startInboundReceiver(opts: ReceiverOptions): Promise<InboundReceiver> {
  const connections = windowCounter(opts.connectionsPerMinute);
  const messages = windowCounter(opts.messagesPerMinute);
  const open = new Map<string, number>();
  const sessions = new Set<string>();
  const maxOpen = opts.maxConnectionsPerAddress ?? 10;
  const { log, verp } = opts;
  // Reports arriving together share one transaction (group commit, src/lib/group-commit.ts): one
  // commit per batch, up to 4 batches at once. A batch that fails is split and its reports applied
  // one by one; each SMTP answer waits for its report's commit.
  const batcher = new GroupCommit<ClassifiedMessage, Outcome[]>({
    run: (_group, items) =>
      opts.db.transaction().execute(async (trx) => (await applyReceivedIn(trx, items, log, { autoDisable: opts.autoDisable })).map((value) => ({ ok: true as const, value }))),
    groupOf: () => 'inbound',
    metricName: 'inbound',
    // Reports about one email are applied in the order they arrived, never in two batches at once.
    keysOf: (item) => item.recipients.map((r) => r.emailId),
    maxBatchSize: 64,
    maxInFlight: 4,
    maxInFlightPerGroup: 4,
    onBatchError: (err, info) => log.warn({ err, size: info.size }, 'inbound feedback batch failed; applying its reports one by one'),
  });

  const options: SMTPServerOptions = {
    name: verp.domain,
    banner: 'bounce and feedback receiver',
    size: opts.maxSizeBytes,
    authOptional: true,
    disabledCommands: opts.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(opts.tls && { key: opts.tls.key, cert: opts.tls.cert }),
    disableReverseLookup: true,
    logger: false,
    maxClients: 500,
    socketTimeout: 60_000,
    closeTimeout: 5_000,
    onConnect(session, callback) {
      const ip = clientKey(session.remoteAddress);
      if ((open.get(ip) ?? 0) >= maxOpen) return callback(smtpError(421, `4.7.0 Too many connections from ${ip}, try again later`));
      if (!connections.take(ip)) return callback(smtpError(421, `4.7.0 Too many connections from ${ip} this minute, try again later`));
      open.set(ip, (open.get(ip) ?? 0) + 1);
      sessions.add(session.id);
      callback();
    },
    onClose(session) {
      if (!sessions.delete(session.id)) return;
      const ip = clientKey(session.remoteAddress);
      const n = (open.get(ip) ?? 1) - 1;
      if (n <= 0) open.delete(ip);
      else open.set(ip, n);
    },
    onMailFrom(_address, session, callback) {
      if (!messages.take(clientKey(session.remoteAddress))) return callback(smtpError(450, '4.7.1 Too many messages from your address this minute, try again later'));
      callback();
    },
    onRcptTo(address, session, callback) {
      if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(smtpError(452, '4.5.3 Too many recipients'));
      const at = address.address.lastIndexOf('@');
      const domain = address.address.slice(at + 1).toLowerCase();
      // Never a relay: only the bounce domain, and at it only addresses this server minted.
      const relaying = () => callback(smtpError(550, '5.7.1 Relaying denied: this server accepts mail only for its bounce addresses and inbound domains'));
      if (at < 0 || at === address.address.length - 1) return relaying();
      if (domain === verp.domain) {
        if (!verp.emailIdOf(address.address)) return callback(smtpError(550, '5.1.1 No such bounce address'));
        return callback();
      }
      // A project's verified domain with inbound mail enabled, or a subdomain of one (one index probe).
      findInboundDomain(opts.db, domain).then(
        (found) => {
          if (!found) return relaying();
          const list = inboundRecipients.get(session.envelope) ?? [];
          list.push({ address: address.address.toLowerCase(), projectId: found.projectId });
          inboundRecipients.set(session.envelope, list);
          callback();
        },
        (err: unknown) => {
          log.error({ err }, 'inbound domain lookup failed');
          callback(smtpError(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      const inbound = inboundRecipients.get(session.envelope) ?? [];
      // Reports: only the start is kept (MAX_READ_BYTES: memory per connection stays bounded); the
      // rest is counted. Mail for inbound domains is kept whole (up to the size limit) for its bodies and attachments.
      const keep = inbound.length > 0 ? opts.maxSizeBytes : MAX_READ_BYTES;
      const chunks: Buffer[] = [];
      let kept = 0;
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (kept >= keep) return;
        const part = chunk.subarray(0, keep - kept);
        chunks.push(part);
        kept += part.length;
      });
      stream.on('error', (err) => callback(err));
      stream.on('end', () => {
        if (stream.sizeExceeded) return callback(smtpError(552, `5.3.4 Message exceeds the maximum size of ${opts.maxSizeBytes} bytes`));
        const raw = Buffer.concat(chunks);
        const recipients = session.envelope.rcptTo.flatMap((r) => {
          const emailId = verp.emailIdOf(r.address);
          return emailId ? [{ address: r.address.toLowerCase(), emailId }] : [];
        });
        const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const meta = { raw, size, remoteAddress: session.remoteAddress, helo: session.hostNameAppearsAs || null, mailFrom };
        const reports =
          recipients.length === 0
            ? Promise.resolve(undefined)
            : classifyReceived({ ...meta, recipients }).then(async (classified) => ({ kind: classified.parsed.classification.kind, outcomes: await batcher.submit(classified) }));
        const mail: Promise<InboundMailOutcome[] | undefined> = inbound.length === 0 ? Promise.resolve(undefined) : processInboundMail(opts.db, { ...meta, recipients: inbound }, { attachments: opts.attachments });
        Promise.all([reports, mail]).then(
          ([report, received]) => {
            // One line per report would dominate the log at volume: debug (the rows in inbound_feedback and inbound_messages are the record).
            log.debug({ remoteAddress: session.remoteAddress, kind: report?.kind, outcomes: report?.outcomes, recipients: recipients.map((r) => r.emailId), received }, 'inbound mail received');
            const what = [report?.kind, received && (received.some((r) => r.outcome === 'received') ? 'received' : (received[0]?.outcome ?? 'ignored'))].filter(Boolean).join(', ');
            callback(null, `2.0.0 Accepted (${what})`);
          },
          (err: unknown) => {
            log.error({ err, remoteAddress: session.remoteAddress }, 'inbound message not processed; the sender will retry');
            callback(smtpError(451, '4.3.0 Temporary failure processing the message, try again later'));
          },
        );
      });
    },
  };
  const server = new SMTPServer(options);
  // Clients that reset or misbehave are routine on a public port: debug only.
  server.on('error', (err) => log.debug({ err }, 'inbound SMTP connection error'));
  const port = await new Promise<number>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once('error', onError);
    server.listen(opts.port, opts.host, () => {
      server.server.removeListener('error', onError);
      const address = server.server.address();
      if (typeof address === 'object' && address) resolve(address.port);
      else reject(new Error('inbound SMTP receiver did not listen'));
    });
  });
  return {
    port,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await batcher.close();
    },
  };
}
