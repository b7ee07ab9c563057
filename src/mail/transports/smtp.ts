import { SmtpConnection, StaleConnectionError, type TransactionState } from './smtp-connection.js';
import { classifySmtpError, SmtpError } from './smtp-error.js';
import { type SmtpOptions, smtpPoolOptions } from './smtp-url.js';

export { classifySmtpError, SmtpError } from './smtp-error.js';
export { SMTP_POOL_DEFAULTS, SMTP_URL_PARAMS, type SmtpOptions, smtpPoolOptions } from './smtp-url.js';

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
   * Awaited right before the message's final dot goes out, once the relay answered DATA and has
   * every byte of the message; a rejection closes the connection without the dot (the relay
   * discards the transaction). The final `.` line is never written before it resolved.
   */
  beforeEndOfData?: () => Promise<void>;
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

/** `rateLimit` messages per `rateDelta` ms over the pool (fixed windows); a message over it waits for the next window. */
function rateLimiter(limit: number | undefined, delta: number): () => Promise<void> {
  if (limit === undefined) return () => Promise.resolve();
  let windowStart = 0;
  let count = 0;
  return async () => {
    for (;;) {
      const now = Date.now();
      if (now - windowStart >= delta) {
        windowStart = now;
        count = 0;
      }
      if (count < limit) {
        count++;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, windowStart + delta - now));
    }
  };
}

/** The connections to the relay: idle ones are reused (most recent first), at most maxConnections exist. */
function connectionPool(options: SmtpOptions) {
  const idle: SmtpConnection[] = [];
  let closed = false;
  const open = async (): Promise<SmtpConnection> => {
    const conn = await SmtpConnection.open(options);
    conn.onClose = () => {
      const at = idle.indexOf(conn);
      if (at !== -1) idle.splice(at, 1);
    };
    return conn;
  };
  return {
    /** An idle connection, else a new one (`fresh`: always a new one). */
    async take(fresh: boolean): Promise<SmtpConnection> {
      let conn = fresh ? undefined : idle.pop();
      while (conn?.closed) conn = idle.pop();
      conn ??= await open();
      conn.setBusy(true);
      return conn;
    },
    give(conn: SmtpConnection): void {
      if (conn.closed) return;
      if (closed || conn.transactions >= options.maxMessages) return void conn.quit();
      conn.setBusy(false);
      idle.push(conn);
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.all(idle.splice(0).map((conn) => conn.quit()));
    },
  };
}

/**
 * A pooled SMTP transport to SMTP_URL (smtp:// with STARTTLS when offered, smtps:// for TLS):
 * our own client (src/mail/transports/smtp-connection.ts), pipelining the envelope when the relay
 * offers PIPELINING. Throws at once on an SMTP_URL it cannot use (e.g. an unknown parameter).
 */
export function createSmtpTransport(smtpUrl: string): SmtpTransport {
  const options = smtpPoolOptions(smtpUrl);
  const pool = connectionPool(options);
  const slots = semaphore(options.maxConnections);
  const rate = rateLimiter(options.rateLimit, options.rateDelta);
  return {
    reserve: semaphore(options.maxConnections),
    async send(raw, envelope, opts = {}) {
      const state: TransactionState = { endOfDataSent: false };
      const release = await slots();
      try {
        await rate();
        // An idle connection the relay closed meanwhile fails before any reply: once more on a new one.
        for (let fresh = false; ; fresh = true) {
          const conn = await pool.take(fresh);
          try {
            return { response: await conn.send(raw, envelope, opts.beforeEndOfData, state) };
          } catch (err) {
            if (err instanceof StaleConnectionError && !fresh) continue;
            throw err;
          } finally {
            pool.give(conn);
          }
        }
      } catch (err) {
        const smtp = err instanceof StaleConnectionError ? new SmtpError(`ECONNECTION: ${err.message}`, false, undefined, { cause: err }) : classifySmtpError(err);
        smtp.endOfDataSent = state.endOfDataSent;
        throw smtp;
      } finally {
        release();
      }
    },
    close: () => pool.close(),
  };
}
