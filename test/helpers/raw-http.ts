import net from 'node:net';

/** What a raw HTTP client saw: the status (0: the connection ended without an answer). */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from connecting to the complete answer (or to the end of the attempt). */
  elapsedMs: number;
}

/** Splits one HTTP/1.1 answer once it is complete (Content-Length bodies only). */
function parseAnswer(data: Buffer): Omit<RawAnswer, 'elapsedMs'> | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = data.subarray(end + 4);
  if (body.length < length) return undefined;
  return { status: Number(statusLine.split(' ')[1]), headers, body: body.subarray(0, length).toString('utf8') };
}

/**
 * Sends `head` and the first `burst` bytes of `body` at once, then one byte of the rest every
 * `intervalMs`, until the server answers, closes, or `deadlineMs` passes. The socket is always
 * closed before this resolves.
 */
export function trickle(
  port: number,
  request: { head: string; body: Buffer; burst: number },
  opts: { intervalMs: number; deadlineMs: number },
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let sent = 0;
    let done = false;
    const finish = (answer: Omit<RawAnswer, 'elapsedMs'>) => {
      if (done) return;
      done = true;
      clearInterval(ticker);
      clearTimeout(deadline);
      socket.destroy();
      resolve({ ...answer, elapsedMs: Date.now() - started });
    };
    const noAnswer = () => finish({ status: 0, headers: {}, body: received.toString('utf8') });
    const ticker = setInterval(() => {
      if (sent < request.body.length && socket.writable) socket.write(request.body.subarray(sent, ++sent));
    }, opts.intervalMs);
    const deadline = setTimeout(noAnswer, opts.deadlineMs);
    socket.once('connect', () => {
      sent = Math.min(request.burst, request.body.length);
      socket.write(Buffer.concat([Buffer.from(request.head, 'latin1'), request.body.subarray(0, sent)]));
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const answer = parseAnswer(received);
      if (answer) finish(answer);
    });
    socket.on('error', () => undefined); // a reset after the answer, or none: `close` decides
    socket.once('close', noAnswer);
  });
}

/** The head of a request with a Content-Length body. */
export function requestHead(method: string, path: string, headers: Record<string, string>, length: number): string {
  const lines = Object.entries({ host: '127.0.0.1', ...headers, 'content-length': String(length) }).map(([k, v]) => `${k}: ${v}`);
  return `${method} ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

/**
 * Streams an endless chunked multipart upload on a raw socket, as fast as the server reads it,
 * until the server answers or closes, or `maxBytes` are sent. Returns the answer's status (0:
 * none) and how many file bytes went out: a server that stops reading at its limit answers
 * long before `maxBytes`. The socket is always closed before this resolves.
 */
export async function floodUpload(
  port: number,
  secret: string,
  maxBytes: number,
  target: { path: string; field: string; filename: string } = { path: '/uploads/image', field: 'image', filename: 'big.png' },
): Promise<{ status: number; sent: number; connectionClose: boolean }> {
  // The server closes while bytes are still coming: its kernel answers them with a reset, which can
  // reach this socket before the answer is read and discard it (status 0). Tried again then, at
  // most three times: a server that never answers still gives 0.
  let result = await floodOnce(port, secret, maxBytes, target);
  for (let attempt = 1; attempt < 3 && result.status === 0; attempt++) result = await floodOnce(port, secret, maxBytes, target);
  return result;
}

function floodOnce(
  port: number,
  secret: string,
  maxBytes: number,
  target: { path: string; field: string; filename: string },
): Promise<{ status: number; sent: number; connectionClose: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const boundary = 'flood';
    const chunk = Buffer.alloc(256 * 1024, 0x41);
    let sent = 0;
    let received = Buffer.alloc(0);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      const text = received.toString('latin1');
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), sent, connectionClose: /\r\nconnection: close\r\n/i.test(text) });
    };
    const frame = (data: Buffer) => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
    // One write per turn of the event loop: an answer that arrived is read before the next write
    // (a write refused by the closed server socket would destroy this one, unread answer included).
    const pump = () => {
      if (done || sent >= maxBytes) return;
      sent += chunk.length;
      if (socket.write(frame(chunk))) setImmediate(pump);
      else socket.once('drain', pump);
    };
    socket.once('connect', () => {
      socket.write(
        `POST ${target.path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${secret}\r\n` +
          `content-type: multipart/form-data; boundary=${boundary}\r\ntransfer-encoding: chunked\r\n\r\n`,
      );
      socket.write(frame(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${target.field}"; filename="${target.filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`)));
      pump();
    });
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      if (received.includes('\r\n\r\n')) finish();
    });
    socket.on('error', () => undefined); // a reset once the server stopped reading: `close` decides
    socket.once('close', finish);
  });
}
