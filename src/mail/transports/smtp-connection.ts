import { isAscii } from 'node:buffer';
import net from 'node:net';
import tls from 'node:tls';
import { SmtpError } from './smtp-error.js';
import type { SmtpOptions } from './smtp-url.js';
import { dotStuff, endOfData, replyParser, type SmtpReply } from './smtp-wire.js';

/** Called right before the message's final dot; a rejection aborts the transaction without it. */
export type EndOfDataGate = () => Promise<void>;

/** What one transaction reports besides its reply or error. */
export interface TransactionState {
  /** Set once the gate resolved and the final dot was written. */
  endOfDataSent: boolean;
}

/** A transient failure with no reply (connection lost, timeout, TLS, protocol). */
function transient(code: string, message: string, cause?: unknown): SmtpError {
  return new SmtpError(`${code}: ${message}`, false, undefined, { cause });
}

/** A refusal before anything was sent that would be refused again (address, size). */
function refused(code: string, message: string): SmtpError {
  return new SmtpError(`${code}: ${message}`, true, undefined);
}

/** The relay's reply as an error: 5xx permanent, anything else transient. */
function replyError(reply: SmtpReply): SmtpError {
  return new SmtpError(reply.text || `Unexpected reply ${reply.code}`, reply.code >= 500, reply.code || undefined);
}

/** A failure on a connection that sat idle, before the relay answered anything: retried on a fresh one. */
export class StaleConnectionError extends Error {}

const ADDRESS = /^[^\s<>]+$/;
const NON_ASCII = /[\u0080-\uffff]/;
/** The replies that let a transaction go on: MAIL FROM, RCPT TO (251: will forward), DATA. */
const ENVELOPE_OK: readonly (readonly number[])[] = [[250], [250, 251], [354]];

/**
 * One SMTP client connection: greeting, EHLO, STARTTLS, AUTH, then transactions one at a time
 * (the pool hands it to one sender at a time). Every socket has TCP_NODELAY. A failure of the
 * connection itself (error, close, timeout, unexpected reply) destroys it: `closed` is set and
 * `onClose` runs once.
 */
export class SmtpConnection {
  private socket: net.Socket;
  private readonly waiters: { resolve: (reply: SmtpReply) => void; reject: (err: Error) => void }[] = [];
  private failure: Error | undefined;
  private capabilities = new Set<string>();
  private authMechanisms: string[] = [];
  private maxSize = 0;
  private busy = true;
  /** Replies read so far. */
  private received = 0;
  closed = false;
  /** Transactions started on this connection (the pool recycles it at maxMessages). */
  transactions = 0;
  onClose: () => void = () => undefined;

  private constructor(
    socket: net.Socket,
    private readonly options: SmtpOptions,
  ) {
    this.socket = socket;
  }

  /** Connects, reads the greeting, says EHLO, upgrades with STARTTLS and authenticates as SMTP_URL asks. */
  static async open(options: SmtpOptions): Promise<SmtpConnection> {
    const plain = net.connect({ host: options.host, port: options.port, noDelay: true });
    plain.setNoDelay(true);
    const conn = new SmtpConnection(plain, options);
    plain.on('error', (err) => conn.destroy(err));
    if (!options.secure) conn.attach(plain);
    try {
      await conn.bounded(options.connectionTimeout, 'Connection timeout', () => (options.secure ? conn.startTls() : waitFor(plain, 'connect')));
      const greeting = await conn.bounded(options.greetingTimeout, 'Greeting timeout', () => conn.reply());
      if (greeting.code !== 220) throw transient('EPROTOCOL', `Invalid greeting: ${greeting.text}`);
      conn.socket.setTimeout(options.socketTimeout);
      await conn.hello();
      const secure = options.secure || (!options.ignoreTLS && conn.capabilities.has('STARTTLS') && (await conn.upgrade()));
      if (options.requireTLS && !secure) throw transient('ETLS', 'requireTLS is set and the relay does not offer STARTTLS');
      if (options.auth) await conn.authenticate(options.auth);
      return conn;
    } catch (err) {
      conn.destroy(err instanceof Error ? err : new Error(String(err)));
      throw err instanceof SmtpError ? err : transient('ECONNECTION', err instanceof Error ? err.message : String(err), err);
    }
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    const parse = replyParser((reply) => this.onReply(reply));
    socket.on('data', parse);
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy(new Error('Connection closed by the relay')));
    socket.on('timeout', () => {
      // Idle that long: close it politely; in a transaction: the relay stopped answering.
      if (this.busy) this.destroy(Object.assign(new Error('Timeout: no answer from the relay'), { code: 'ETIMEDOUT' }));
      else void this.quit();
    });
  }

  private onReply(reply: SmtpReply): void {
    this.received++;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(reply);
    // Unasked for (e.g. a 421 before the relay closes an idle connection): the connection is done.
    else this.destroy(new Error(`Unexpected reply: ${reply.text}`));
  }

  /** The next reply; registered before the command that it answers is written. */
  private reply(): Promise<SmtpReply> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private async command(line: string): Promise<SmtpReply> {
    const reply = this.reply();
    this.socket.write(`${line}\r\n`);
    return reply;
  }

  private async bounded<T>(ms: number, what: string, run: () => Promise<T>): Promise<T> {
    const timer = setTimeout(() => this.destroy(Object.assign(new Error(what), { code: 'ETIMEDOUT' })), ms);
    try {
      return await run();
    } finally {
      clearTimeout(timer);
    }
  }

  /** TLS over the current socket (smtps:// from the start, or after STARTTLS's 220). */
  private async startTls(): Promise<void> {
    const plain = this.socket;
    if (plain.connecting) await waitFor(plain, 'connect');
    const servername = this.options.tls.servername ?? (net.isIP(this.options.host) ? undefined : this.options.host);
    const secure = tls.connect({ ...this.options.tls, socket: plain, servername });
    secure.setNoDelay(true);
    this.attach(secure);
    await waitFor(secure, 'secureConnect');
  }

  private async hello(): Promise<void> {
    let reply = await this.command(`EHLO ${this.options.name}`);
    if (reply.code >= 500) reply = await this.command(`HELO ${this.options.name}`);
    if (reply.code !== 250) throw transient('EPROTOCOL', `EHLO/HELO refused: ${reply.text}`);
    this.capabilities = new Set();
    for (const line of reply.lines.slice(1)) {
      const [keyword = '', ...args] = line.slice(4).trim().split(/\s+/);
      const name = keyword.toUpperCase();
      this.capabilities.add(name);
      if (name === 'AUTH') this.authMechanisms = args.map((a) => a.toUpperCase());
      if (name === 'SIZE') this.maxSize = Number(args[0]) || 0;
    }
  }

  private async upgrade(): Promise<boolean> {
    const reply = await this.command('STARTTLS');
    if (reply.code !== 220) throw transient('ETLS', `STARTTLS refused: ${reply.text}`);
    const timeout = this.options.connectionTimeout;
    const plain = this.socket;
    plain.removeAllListeners('data').removeAllListeners('close').removeAllListeners('timeout');
    await this.bounded(timeout, 'TLS handshake timeout', () => this.startTls());
    this.socket.setTimeout(this.options.socketTimeout);
    await this.hello();
    return true;
  }

  private async authenticate({ user, pass }: { user: string; pass: string }): Promise<void> {
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
    let reply: SmtpReply;
    if (this.authMechanisms.includes('PLAIN')) {
      reply = await this.command(`AUTH PLAIN ${b64(`\0${user}\0${pass}`)}`);
    } else if (this.authMechanisms.includes('LOGIN')) {
      reply = await this.command('AUTH LOGIN');
      if (reply.code === 334) reply = await this.command(b64(user));
      if (reply.code === 334) reply = await this.command(b64(pass));
    } else {
      throw transient('EAUTH', `the relay offers no AUTH PLAIN or LOGIN${this.authMechanisms.length ? ` (only ${this.authMechanisms.join(' ')})` : ''}`);
    }
    if (reply.code !== 235) {
      const err = replyError(reply);
      throw new SmtpError(`Authentication failed: ${err.message}`, err.permanent, err.responseCode);
    }
  }

  /** Marks the connection in use (it keeps the process alive) or idle (it does not). */
  setBusy(busy: boolean): void {
    this.busy = busy;
    if (busy) this.socket.ref();
    else this.socket.unref();
  }

  /**
   * One message: the envelope (MAIL FROM, RCPT TO, DATA in one write when the relay offers
   * PIPELINING), the dot-stuffed message in one write, `gate`, then the final dot. Resolves with
   * the relay's 250 reply; rejects with an SmtpError, or a StaleConnectionError when an idle
   * connection turned out closed before any reply (nothing was sent: retry elsewhere).
   */
  async send(raw: Buffer, envelope: { from: string; to: string }, gate: EndOfDataGate | undefined, state: TransactionState): Promise<string> {
    const reused = this.transactions > 0;
    this.transactions++;
    const { from, to } = envelope;
    if (!ADDRESS.test(from) || !ADDRESS.test(to)) throw refused('EENVELOPE', `Invalid address in the envelope: <${from}> → <${to}>`);
    const utf8 = NON_ASCII.test(from) || NON_ASCII.test(to);
    if (utf8 && !this.capabilities.has('SMTPUTF8')) throw refused('EENVELOPE', `Internationalized address and the relay does not offer SMTPUTF8: <${from}> → <${to}>`);
    if (this.maxSize > 0 && raw.length > this.maxSize) throw refused('EMESSAGE', `Message size ${raw.length} larger than the relay's SIZE ${this.maxSize}`);
    const params = `${utf8 ? ' SMTPUTF8' : ''}${this.capabilities.has('8BITMIME') && !isAscii(raw) ? ' BODY=8BITMIME' : ''}`;
    const commands = [`MAIL FROM:<${from}>${params}\r\n`, `RCPT TO:<${to}>\r\n`, 'DATA\r\n'];

    const received = this.received;
    const { replies, failure } = this.capabilities.has('PIPELINING') ? await this.pipelined(commands) : await this.oneByOne(commands);
    const refusal = replies.find((reply, i) => !ENVELOPE_OK[i]?.includes(reply.code));
    if (refusal === undefined && failure !== undefined) {
      // An idle connection the relay closed (EOF, or its 421 arrived as we wrote): nothing reached it.
      if (reused && this.received === received) throw new StaleConnectionError('The idle connection was closed by the relay', { cause: failure });
      throw transient('ECONNECTION', failure instanceof Error ? failure.message : String(failure), failure);
    }
    if (refusal !== undefined) {
      if (reused && refusal === replies[0] && refusal.code === 421) {
        this.destroy(new Error(refusal.text));
        throw new StaleConnectionError(refusal.text);
      }
      const err = replyError(refusal);
      if (replies[2]?.code === 354) this.destroy(err); // in DATA after a refusal: never end that message
      else await this.reset();
      throw err;
    }
    return this.transfer(raw, gate, state);
  }

  /**
   * The envelope in one write; the replies read in order up to the first missing one (a relay
   * that refuses RCPT with a 421 may close before answering DATA: its reply is what counts).
   */
  private async pipelined(commands: string[]): Promise<{ replies: SmtpReply[]; failure?: unknown }> {
    const pending = commands.map(() => this.reply());
    this.socket.write(commands.join(''));
    const settled = await Promise.allSettled(pending);
    const replies: SmtpReply[] = [];
    for (const result of settled) {
      if (result.status === 'rejected') return { replies, failure: result.reason };
      replies.push(result.value);
    }
    return { replies };
  }

  /** The envelope one command at a time, stopping at the first refusal. */
  private async oneByOne(commands: string[]): Promise<{ replies: SmtpReply[]; failure?: unknown }> {
    const replies: SmtpReply[] = [];
    for (const [i, command] of commands.entries()) {
      const pending = this.reply();
      this.socket.write(command);
      try {
        replies.push(await pending);
      } catch (failure) {
        return { replies, failure };
      }
      if (!ENVELOPE_OK[i]?.includes(replies[i]?.code ?? 0)) break;
    }
    return { replies };
  }

  private async transfer(raw: Buffer, gate: EndOfDataGate | undefined, state: TransactionState): Promise<string> {
    const ending = endOfData(raw);
    const body = dotStuff(raw);
    if (!gate) {
      const final = this.reply();
      this.socket.cork();
      this.socket.write(body);
      this.socket.write(ending);
      this.socket.uncork();
      state.endOfDataSent = true;
      return this.finalReply(final);
    }
    this.socket.write(body);
    try {
      await gate();
    } catch (err) {
      // No dot: the relay sees the connection end inside DATA and discards the transaction.
      this.destroy(err instanceof Error ? err : new Error(String(err)));
      throw new SmtpError(err instanceof Error ? err.message : String(err), false, undefined, { cause: err });
    }
    if (this.failure) throw transient('ECONNECTION', `${this.failure.message} (before the end of data: not sent)`, this.failure);
    const final = this.reply();
    this.socket.write(ending);
    state.endOfDataSent = true;
    return this.finalReply(final);
  }

  private async finalReply(pending: Promise<SmtpReply>): Promise<string> {
    let reply: SmtpReply;
    try {
      reply = await pending;
    } catch (err) {
      throw transient(String((err as { code?: unknown }).code ?? 'ECONNECTION'), err instanceof Error ? err.message : String(err), err);
    }
    if (reply.code !== 250) throw replyError(reply);
    return reply.text;
  }

  /** After a refused envelope: RSET so the connection can take the next message (or drop it). */
  private async reset(): Promise<void> {
    try {
      const reply = await this.command('RSET');
      if (reply.code !== 250) this.destroy(new Error(`RSET refused: ${reply.text}`));
    } catch {
      // already destroyed
    }
  }

  /** QUIT and close (idle connections; the pool's close and recycling). */
  quit(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const closed = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    this.waiters.push({ resolve: () => undefined, reject: () => undefined });
    this.socket.end('QUIT\r\n');
    this.closed = true;
    this.onClose();
    // A relay that never closes its side: don't wait for it (its socket does not hold the process).
    const timer = setTimeout(() => this.socket.destroy(), 1000);
    timer.unref();
    return closed.finally(() => clearTimeout(timer));
  }

  destroy(err: Error): void {
    if (!this.failure) this.failure = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.failure);
    if (!this.socket.destroyed) this.socket.destroy();
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }

  get isBusy(): boolean {
    return this.busy;
  }
}

function waitFor(socket: net.Socket, event: 'connect' | 'secureConnect'): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    socket.once('error', onError);
    socket.once('close', () => reject(new Error('Connection closed')));
    socket.once(event, () => {
      socket.removeListener('error', onError);
      resolve();
    });
  });
}
