import { SMTPServer, type SMTPServerAddress } from 'smtp-server';

/** One message the sink accepted (answered 250 to). */
export interface SinkMessage {
  from: string;
  to: string[];
  /** The message as received; empty when the sink was started with `keepRaw: false`. */
  raw: Buffer;
  messageId: string | undefined;
  receivedAt: Date;
}

export interface SinkReply {
  /** SMTP reply code, e.g. 451 (transient) or 550 (permanent). */
  code: number;
  message?: string;
  /** How many times to answer so; afterwards the address is accepted. Default: always. */
  times?: number;
}

/** A real SMTP server on loopback (smtp-server) that keeps what it accepts. No TLS, no AUTH. */
export interface SmtpSink {
  readonly port: number;
  /** `smtp://127.0.0.1:<port>`, for SMTP_URL. */
  readonly url: string;
  readonly messages: SinkMessage[];
  /** Answers RCPT TO of `address` (case-insensitive) with `reply` instead of 250; `times: 0` stops it. */
  reject(address: string, reply: SinkReply): void;
  /**
   * Stalls the next transaction to `address` (once): at `rcpt`, its RCPT TO gets no reply (the
   * client waits inside the transaction, no data sent yet); at `reply`, the whole message and its
   * final dot are received, and recorded in `messages` as a relay that queued it would, but the
   * 250 is held (the client waits after its end of data). Answered by {@link SmtpSink.release}.
   */
  hold(address: string, at: 'rcpt' | 'reply'): void;
  /** Transactions stalled by {@link SmtpSink.hold} right now. */
  held(): { rcpt: string[]; reply: string[] };
  /**
   * Answers every stalled transaction normally (a no-op for a client that went away meanwhile)
   * and forgets the holds no transaction has taken yet.
   */
  release(): void;
  /** How many RCPT TO each address received (accepted or not). */
  attempts(address: string): number;
  messagesTo(address: string): SinkMessage[];
  /**
   * Client connections open right now. Once 0 after the clients stopped sending, nothing more can
   * arrive: the sink has read everything they wrote (a message is recorded before its 250).
   */
  openConnections(): number;
  /** Resolves once at least `count` messages arrived; rejects after `timeoutMs`. */
  waitForMessages(count: number, timeoutMs?: number): Promise<SinkMessage[]>;
  close(): Promise<void>;
}

const MESSAGE_ID = /^Message-ID:[ \t]*(<[^>\r\n]+>)/im;

export interface SinkOptions {
  /** Keep each message's bytes (default true). */
  keepRaw?: boolean;
  /**
   * A slow relay: every RCPT TO reply waits `rcptMs`, every final reply (after the message's dot,
   * which is recorded at once) waits `replyMs`, so transactions spend their time at both stages.
   */
  delays?: { rcptMs?: number; replyMs?: number };
}

export async function startSmtpSink(opts: SinkOptions = {}): Promise<SmtpSink> {
  const keepRaw = opts.keepRaw ?? true;
  const later = (ms: number | undefined, fn: () => void) => {
    if (!ms) return fn();
    setTimeout(() => {
      try {
        fn();
      } catch {
        // the client's connection is gone
      }
    }, ms);
  };
  const messages: SinkMessage[] = [];
  const replies = new Map<string, SinkReply>();
  const rcpts = new Map<string, number>();
  const holds = new Map<string, 'rcpt' | 'reply'>();
  const stalled: { at: 'rcpt' | 'reply'; address: string; answer: () => void }[] = [];
  const takeHold = (address: string, at: 'rcpt' | 'reply') => {
    if (holds.get(address) !== at) return false;
    holds.delete(address);
    return true;
  };

  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    size: 64 * 1024 * 1024,
    closeTimeout: 1000,
    onRcptTo(address: SMTPServerAddress, _session, callback) {
      const to = address.address.toLowerCase();
      rcpts.set(to, (rcpts.get(to) ?? 0) + 1);
      if (takeHold(to, 'rcpt')) return void stalled.push({ at: 'rcpt', address: to, answer: () => callback() });
      const reply = replies.get(to);
      if (!reply) return later(opts.delays?.rcptMs, () => callback());
      const left = (reply.times ?? Infinity) - 1;
      if (left <= 0) replies.delete(to);
      else replies.set(to, { ...reply, times: left });
      callback(Object.assign(new Error(reply.message ?? 'Rejected by the test sink'), { responseCode: reply.code }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        const head = raw.subarray(0, Math.max(0, raw.indexOf('\r\n\r\n'))).toString('latin1');
        const to = session.envelope.rcptTo.map((r) => r.address.toLowerCase());
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to,
          raw: keepRaw ? raw : Buffer.alloc(0),
          messageId: MESSAGE_ID.exec(head)?.[1],
          receivedAt: new Date(),
        });
        const held = to.find((a) => takeHold(a, 'reply'));
        if (held !== undefined) stalled.push({ at: 'reply', address: held, answer: () => callback() });
        else later(opts.delays?.replyMs, () => callback());
      });
    },
  });

  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.server.address();
      if (typeof address === 'object' && address) resolve(address.port);
      else reject(new Error('SMTP sink did not listen'));
    });
  });
  server.on('error', () => undefined);

  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    reject: (address, reply) => {
      if (reply.times === 0) replies.delete(address.toLowerCase());
      else replies.set(address.toLowerCase(), reply);
    },
    hold: (address, at) => void holds.set(address.toLowerCase(), at),
    held: () => ({ rcpt: stalled.filter((h) => h.at === 'rcpt').map((h) => h.address), reply: stalled.filter((h) => h.at === 'reply').map((h) => h.address) }),
    release: () => {
      holds.clear();
      for (const h of stalled.splice(0)) {
        try {
          h.answer();
        } catch {
          // the client's connection is gone
        }
      }
    },
    attempts: (address) => rcpts.get(address.toLowerCase()) ?? 0,
    messagesTo: (address) => messages.filter((m) => m.to.includes(address.toLowerCase())),
    openConnections: () => server.connections.size,
    async waitForMessages(count, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`SMTP sink: ${messages.length} of ${count} messages after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return messages;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
