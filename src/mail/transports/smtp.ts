import net from 'node:net';
import { Readable } from 'node:stream';
import nodemailer from 'nodemailer';
import type SMTPPool from 'nodemailer/lib/smtp-pool/index.js';
import { parseConnectionUrl } from 'nodemailer/lib/shared/index.js';
import DataStream from 'nodemailer/lib/smtp-connection/data-stream.js';

/** Pool defaults; each can be overridden by a query parameter of SMTP_URL (`?maxConnections=16`). */
export const SMTP_POOL_DEFAULTS = {
  /** Connections kept open to the relay (nodemailer's default is 5). */
  maxConnections: 8,
  /** Messages per connection before it is recycled (nodemailer's default is 100). */
  maxMessages: 1000,
  connectionTimeout: 10_000,
  greetingTimeout: 10_000,
  /** No answer for this long during a transaction fails the attempt (it is retried). */
  socketTimeout: 60_000,
} as const;

/** Query parameters of SMTP_URL that are ours, not nodemailer's. */
export const OUR_URL_PARAMS = ['projectRate'] as const;

/** The relay's answer to one accepted message. */
export interface SmtpAccepted {
  /** The final reply, e.g. `250 2.0.0 Ok: queued as 4B1F…`. */
  response: string;
}

export interface SmtpTransport {
  /**
   * Waits until one of the pool's connections is free for this caller (at most maxConnections
   * callers hold one); call the returned function when done. Delivery marks an email SENDING
   * only once it holds one, so an interrupted send is one in progress, not one queued behind
   * the others.
   */
  reserve(): Promise<() => void>;
  /** Sends a finished (signed) message; resolves on the relay's 250, rejects with an {@link SmtpError}. */
  send(raw: Buffer, envelope: { from: string; to: string }, opts?: SendOptions): Promise<SmtpAccepted>;
  close(): Promise<void>;
}

export interface SendOptions {
  /**
   * Awaited right before the message's final dot goes out; a rejection aborts the transaction
   * without it (the relay discards the message). Nothing of the message is withheld but its
   * last bytes and the dot, so the wait overlaps the transfer.
   */
  beforeEndOfData?: () => Promise<void>;
}

/**
 * A failed SMTP attempt: `permanent` for a 5xx (or an envelope/message the relay can never take).
 * `endOfDataSent`: the failure came after `beforeEndOfData` resolved and the final dot was
 * released, so without a reply (`responseCode` undefined) the relay may have accepted it.
 */
export class SmtpError extends Error {
  endOfDataSent = false;
  constructor(
    message: string,
    readonly permanent: boolean,
    readonly responseCode: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SmtpError';
  }
}

/** What a send's {@link gateEndOfData} shares with it. */
interface EndOfDataGate {
  beforeEnd: () => Promise<void>;
  /** Set once `beforeEnd` resolved and the last bytes and the dot were let through. */
  released: boolean;
  /** Set once the send settled: a gate opening after that must not call `beforeEnd`. */
  settled: boolean;
}

/**
 * The message stream nodemailer writes into the DATA phase, with its last chunk and its end held
 * until `gate.beforeEnd` resolves. Why this works (nodemailer 7, read in its source):
 * - smtp-connection pipes the message into its DataStream only once DATA got its 354 (send →
 *   _setEnvelope → _actionDATA → _createSendStream), and DataStream writes the terminating
 *   `\r\n.\r\n` only in `_flush`, when the message stream ends;
 * - a message stream error fails the send with ESTREAM and the pool closes the connection
 *   (smtp-pool/pool-resource.js) without the dot: the relay discards the transaction;
 * - this stream is the last stage of mime-node's createReadStream (a processFunc, no `newline`
 *   or DKIM option set), so it is read only by that pipe: nothing before it waits on the gate,
 *   and `beforeEnd` runs once the relay has every byte but the last chunk. Stages before it
 *   buffer the whole message eagerly; that is fine, it is in memory already.
 * When the envelope is refused, smtp-connection drains the message into a plain PassThrough
 * instead, before the send's promise settles: the gate opens only into a DataStream.
 */
function gateEndOfData(input: Readable, gate: EndOfDataGate): Readable {
  const chunks: Buffer[] = [];
  let inputEnded = false;
  let demand = false;
  let opening = false;
  let intoData = false;
  class GatedMessage extends Readable {
    override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
      if (destination instanceof DataStream) intoData = true;
      return super.pipe(destination, options);
    }
  }
  const out = new GatedMessage({
    read() {
      demand = true;
      flow();
    },
  });
  const fail = (err: unknown): void => {
    out.destroy(err instanceof Error ? err : new Error(String(err)));
  };
  function flow(): void {
    while (demand && chunks.length > 1) demand = out.push(chunks.shift());
    if (!demand || !inputEnded || opening || chunks.length > 1) return;
    opening = true;
    if (gate.settled || !intoData) return fail(new Error('The message is not being sent (no DATA in progress)'));
    gate.beforeEnd().then(() => {
      if (gate.settled) return fail(new Error('The send already ended'));
      gate.released = true;
      const last = chunks.shift();
      if (last) out.push(last);
      out.push(null);
    }, fail);
  }
  input.on('data', (chunk: Buffer | string) => {
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    flow();
  });
  input.on('end', () => {
    inputEnded = true;
    flow();
  });
  input.on('error', fail);
  return out;
}

function field(err: unknown, name: string): unknown {
  return typeof err === 'object' && err !== null && name in err ? (err as Record<string, unknown>)[name] : undefined;
}

/**
 * 5xx replies are permanent; 4xx replies, connection failures and timeouts are transient.
 * An envelope or message refused before any reply (EENVELOPE, EMESSAGE: e.g. larger than
 * the relay's SIZE) would be refused again: permanent.
 */
export function classifySmtpError(err: unknown): SmtpError {
  if (err instanceof SmtpError) return err;
  const responseCode = typeof field(err, 'responseCode') === 'number' ? Number(field(err, 'responseCode')) : undefined;
  const code = typeof field(err, 'code') === 'string' ? String(field(err, 'code')) : undefined;
  const response = typeof field(err, 'response') === 'string' ? String(field(err, 'response')) : undefined;
  const message = response ?? (err instanceof Error ? err.message : String(err));
  const permanent =
    responseCode !== undefined ? responseCode >= 500 : code === 'EENVELOPE' || code === 'EMESSAGE';
  return new SmtpError(code && !response ? `${code}: ${message}` : message, permanent, responseCode, { cause: err });
}

/**
 * Sockets with TCP_NODELAY: without it every message stalls ~40 ms on Nagle's algorithm
 * meeting the relay's delayed ACK (PERF-NOTES: 6× throughput). For smtps:// nodemailer
 * upgrades this socket to TLS itself.
 */
function getSocket(options: SMTPPool.Options, callback: (err: Error | null, socketOptions?: { connection: net.Socket }) => void): void {
  const socket = net.connect({ host: options.host ?? 'localhost', port: options.port ?? (options.secure ? 465 : 587) });
  socket.setNoDelay(true);
  // nodemailer's own connection timeout starts once it has the socket: bound the connect here.
  const timer = setTimeout(() => socket.destroy(new Error('Connection timeout')), options.connectionTimeout ?? 10_000);
  const onError = (err: Error) => {
    clearTimeout(timer);
    callback(Object.assign(err, { code: 'ECONNECTION' }));
  };
  socket.once('error', onError);
  socket.once('connect', () => {
    clearTimeout(timer);
    socket.removeListener('error', onError);
    callback(null, { connection: socket });
  });
}

/** Pool options from SMTP_URL: our defaults, then the URL's own parameters (ours removed). */
export function smtpPoolOptions(smtpUrl: string): SMTPPool.Options {
  const url = new URL(smtpUrl);
  for (const name of OUR_URL_PARAMS) url.searchParams.delete(name);
  return { ...SMTP_POOL_DEFAULTS, ...parseConnectionUrl(url.toString()), pool: true, getSocket };
}

/** At most `size` holders at once; the others wait in arrival order. */
function semaphore(size: number): () => Promise<() => void> {
  let free = size;
  const waiting: (() => void)[] = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  return async () => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    let released = false;
    return () => {
      if (!released) release();
      released = true;
    };
  };
}

/** A pooled SMTP transport to SMTP_URL (smtp:// with STARTTLS when offered, smtps:// for TLS). */
export function createSmtpTransport(smtpUrl: string): SmtpTransport {
  const options = smtpPoolOptions(smtpUrl);
  const transport = nodemailer.createTransport(options);
  // The gate of each send, by its message (nodemailer hands the same Buffer to its plugins as mail.data.raw).
  const gates = new WeakMap<Buffer, EndOfDataGate>();
  transport.use('stream', (mail, done) => {
    const gate = Buffer.isBuffer(mail.data.raw) ? gates.get(mail.data.raw) : undefined;
    if (gate) mail.message.processFunc((input) => gateEndOfData(input, gate));
    done();
  });
  const reserve = semaphore(Math.max(1, Number(options.maxConnections) || SMTP_POOL_DEFAULTS.maxConnections));
  return {
    reserve,
    async send(raw, envelope, opts = {}) {
      const gate = opts.beforeEndOfData && { beforeEnd: opts.beforeEndOfData, released: false, settled: false };
      if (gate) gates.set(raw, gate);
      try {
        const info = await transport.sendMail({ envelope, raw });
        return { response: info.response };
      } catch (err) {
        const smtp = classifySmtpError(err);
        smtp.endOfDataSent = gate?.released ?? false;
        throw smtp;
      } finally {
        if (gate) gate.settled = true;
        gates.delete(raw);
      }
    },
    async close() {
      transport.close();
    },
  };
}
