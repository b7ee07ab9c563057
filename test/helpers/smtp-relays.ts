import net from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/**
 * SMTP servers on loopback for the client's tests (test/mail/smtp.test.ts): a real smtp-server
 * with any of its options (STARTTLS with its built-in self-signed certificate, smtps, AUTH,
 * hidden extensions), and a scripted one for replies smtp-server cannot give (multi-line
 * refusals, a connection dropped at a chosen command, EHLO refused).
 */

export interface RelayMessage {
  from: string;
  to: string[];
  raw: Buffer;
  /** The session was TLS (smtps, or after STARTTLS). */
  secure: boolean;
  user: string | undefined;
}

export interface Relay {
  readonly url: string;
  readonly port: number;
  readonly messages: RelayMessage[];
  /** Connections accepted so far. */
  connections(): number;
  /** Per MAIL FROM, in order: had RCPT TO and DATA already arrived when MAIL FROM was answered? */
  readonly pipelined: boolean[];
  /** Everything received on plain connections, concatenated (commands and data as on the wire). */
  wire(): string;
  close(): Promise<void>;
}

export interface RelayOptions {
  server?: Partial<SMTPServerOptions>;
  /** Accepted AUTH user → password (AUTH is offered only with this). */
  users?: Record<string, string>;
  /**
   * MAIL FROM is answered only once RCPT TO and DATA arrived behind it, or after this many ms
   * (what `pipelined` records). Default 0: at once, nothing recorded.
   */
  awaitPipelineMs?: number;
  /** Offer STARTTLS (smtp-server's built-in self-signed certificate, expired: clients need tls.rejectUnauthorized=false). Default: not offered. */
  starttls?: boolean;
}

export async function startRelay(opts: RelayOptions = {}): Promise<Relay> {
  const messages: RelayMessage[] = [];
  const pipelined: boolean[] = [];
  const wires = new Map<number, string>();
  let connections = 0;
  const server = new SMTPServer({
    logger: false,
    disabledCommands: [...(opts.users ? [] : ['AUTH']), ...(opts.starttls ? [] : ['STARTTLS'])],
    authOptional: !opts.users,
    closeTimeout: 500,
    ...opts.server,
    onAuth(auth, _session, callback) {
      if (opts.users?.[auth.username ?? ''] === auth.password) return callback(null, { user: auth.username });
      callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onMailFrom(_address, session, callback) {
      if (!opts.awaitPipelineMs) return callback();
      const deadline = Date.now() + opts.awaitPipelineMs;
      const check = () => {
        const wire = wires.get(session.remotePort) ?? '';
        const tail = wire.slice(wire.lastIndexOf('MAIL FROM:'));
        const behind = /RCPT TO:.*\r\nDATA\r\n/s.test(tail);
        if (behind || Date.now() > deadline) {
          pipelined.push(behind);
          return callback();
        }
        setTimeout(check, 5);
      };
      check();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks),
          secure: session.secure,
          user: typeof session.user === 'string' ? session.user : undefined,
        });
        callback();
      });
    },
  });
  server.on('error', () => undefined);
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.server.address();
      if (typeof address === 'object' && address) resolve(address.port);
      else reject(new Error('relay did not listen'));
    });
  });
  server.server.on('connection', (socket: net.Socket) => {
    connections++;
    const key = socket.remotePort ?? 0;
    wires.set(key, '');
    socket.on('data', (chunk: Buffer) => wires.set(key, (wires.get(key) ?? '') + chunk.toString('latin1')));
  });
  const scheme = opts.server?.secure ? 'smtps' : 'smtp';
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    messages,
    connections: () => connections,
    pipelined,
    wire: () => [...wires.values()].join(''),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface ScriptedConnection {
  /** 0 for the first connection accepted, then 1… */
  readonly index: number;
  /** Messages this connection accepted so far. */
  readonly accepted: number;
}

/** The reply to a command line (no CRLF); undefined: the default one; 'drop': close the socket without a reply. */
export type Script = (line: string, conn: ScriptedConnection) => string | undefined | 'drop';

const DEFAULT_EHLO = '250-scripted.test greets you\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 10485760';

function defaultReply(line: string): string {
  const verb = line.split(' ')[0]?.toUpperCase();
  if (verb === 'EHLO') return DEFAULT_EHLO;
  if (verb === 'DATA') return '354 go ahead';
  if (verb === 'QUIT') return '221 bye';
  if (verb === 'MAIL' || verb === 'RCPT' || verb === 'RSET' || verb === 'HELO' || verb === 'NOOP') return '250 OK';
  return '502 not implemented';
}

/** A line-based SMTP server driven by `script`; messages are recorded as received (still dot-stuffed). */
export async function startScriptedRelay(script: Script, finalReply = '250 queued'): Promise<Relay> {
  const messages: RelayMessage[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;
  let wire = '';
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const conn = { index: connections++, accepted: 0 };
    let buffer = Buffer.alloc(0);
    let inData = false;
    let envelope = { from: '', to: [] as string[] };
    socket.write('220 scripted.test ESMTP\r\n');
    socket.on('data', (chunk: Buffer) => {
      wire += chunk.toString('latin1');
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end === -1) return;
          messages.push({ ...envelope, raw: buffer.subarray(0, end + 2), secure: false, user: undefined });
          buffer = buffer.subarray(end + 5);
          inData = false;
          conn.accepted++;
          socket.write(`${finalReply}\r\n`);
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol === -1) return;
        const line = buffer.subarray(0, eol).toString('utf8');
        buffer = buffer.subarray(eol + 2);
        const noRecipient = /^DATA$/i.test(line) && envelope.to.length === 0 ? '554 5.5.1 No valid recipients' : undefined;
        const reply = script(line, conn) ?? noRecipient ?? defaultReply(line);
        if (reply === 'drop') return void socket.destroy();
        if (/^MAIL FROM:/i.test(line) && reply.startsWith('250')) envelope = { from: line.slice(11).split('>')[0] ?? '', to: [] };
        if (/^RCPT TO:/i.test(line) && reply.startsWith('250')) envelope.to.push(line.slice(9).split('>')[0] ?? '');
        if (/^DATA$/i.test(line) && reply.startsWith('354')) inData = true;
        socket.write(`${reply}\r\n`);
        if (/^QUIT$/i.test(line)) return void socket.end();
      }
    });
  });
  const port = await new Promise<number>((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    connections: () => connections,
    pipelined: [],
    wire: () => wire,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
