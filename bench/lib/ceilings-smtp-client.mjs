// Raw SMTP client of bench/ceilings.mjs: plain sockets with TCP_NODELAY, EHLO once per
// connection, then messages back to back. With PIPELINING (RFC 2920) a message's end of data goes
// out in one write with the next MAIL FROM, RCPT TO and DATA, so each message costs one round
// trip plus the one for DATA's 354 (RFC 2920 wants DATA last in a group, its 354 awaited).
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { createWindow } from './ceilings-common.mjs';
import { performance } from 'node:perf_hooks';

/** A 4 KB HTML body (lines under 78 characters, none starting with a dot), CRLF line ends. */
function htmlBody(bytes = 4096) {
  const lines = ['<!doctype html>', '<html><body>'];
  let size = lines.join('\r\n').length;
  for (let i = 0; size < bytes - 40; i++) {
    const line = `<p>Paragraph ${i}: hello from the ceilings benchmark, see you.</p>`;
    lines.push(line);
    size += line.length + 2;
  }
  lines.push('</body></html>');
  return lines.join('\r\n');
}

const BODY = htmlBody();
const FROM = 'sender@bench-sender.example';
const TO = 'rcpt@example.com';

function message(n) {
  return [
    `From: Bench <${FROM}>`,
    `To: <${TO}>`,
    `Subject: Ceiling ${n}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <${n}.${randomBytes(6).toString('hex')}@bench-sender.example>`,
    'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    BODY,
    '.',
    '',
  ].join('\r\n');
}

const ENVELOPE = `MAIL FROM:<${FROM}>\r\nRCPT TO:<${TO}>\r\nDATA\r\n`;

/** One connection: `reply()` resolves with the code of the server's next complete reply. */
async function openConnection(port) {
  const socket = net.connect({ port, host: '127.0.0.1', noDelay: true });
  socket.setNoDelay(true);
  const replies = [];
  const waiting = [];
  let partial = '';
  let lines = [];
  let failure;
  const deliver = (r) => (waiting.length > 0 ? waiting.shift().resolve(r) : replies.push(r));
  socket.setEncoding('utf8').on('data', (chunk) => {
    const parts = (partial + chunk).split('\r\n');
    partial = parts.pop();
    for (const line of parts) {
      lines.push(line);
      if (line[3] !== '-') {
        deliver({ code: Number(line.slice(0, 3)), lines });
        lines = [];
      }
    }
  });
  const fail = (err) => {
    failure = err;
    for (const w of waiting.splice(0)) w.reject(err);
  };
  socket.on('error', fail);
  socket.on('close', () => fail(new Error('SMTP connection closed')));
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const reply = () => {
    if (replies.length > 0) return Promise.resolve(replies.shift());
    if (failure) return Promise.reject(failure);
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  };
  const expect = async (code) => {
    const r = await reply();
    if (r.code !== code) throw new Error(`SMTP: expected ${code}, got ${r.lines.join(' / ')}`);
    return r;
  };
  return { socket, expect };
}

/**
 * `connections` connections sending 4 KB HTML messages for the window; counts the messages the
 * sink answered 250 to after their final dot. Returns rate and latency (DATA's 354 to the 250).
 */
export async function measureSmtp({ port, connections, seconds }) {
  const window = createWindow(seconds);
  let n = 0;
  let pipelined = true;
  const run = async () => {
    const { socket, expect } = await openConnection(port);
    await expect(220);
    socket.write('EHLO ceilings.local\r\n');
    const ehlo = await expect(250);
    const pipelining = ehlo.lines.some((l) => /^250[- ]PIPELINING/i.test(l));
    if (!pipelining) pipelined = false;
    const envelope = async () => {
      if (pipelining) {
        socket.write(ENVELOPE);
      } else {
        socket.write(`MAIL FROM:<${FROM}>\r\n`);
        await expect(250);
        socket.write(`RCPT TO:<${TO}>\r\n`);
        await expect(250);
        socket.write('DATA\r\n');
        await expect(354);
        return;
      }
      await expect(250);
      await expect(250);
      await expect(354);
    };
    await envelope();
    for (;;) {
      const started = performance.now();
      const more = window.open();
      // End of this message's data, and (pipelined) the next message's envelope in the same write.
      socket.write(message(n++) + (more && pipelining ? ENVELOPE : ''));
      await expect(250);
      window.done(started);
      if (!more) break;
      if (pipelining) {
        await expect(250);
        await expect(250);
        await expect(354);
      } else {
        await envelope();
      }
    }
    socket.write('QUIT\r\n');
    await expect(221);
    socket.end();
  };
  const runs = Array.from({ length: connections }, run);
  await Promise.all(runs);
  return { ...window.result(), sent: n, pipelined };
}
