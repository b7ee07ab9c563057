import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailTransport } from '../../src/mail/transports/index.js';
import { classifySmtpError, createSmtpTransport, SMTP_POOL_DEFAULTS, SmtpError, smtpPoolOptions, type SmtpTransport } from '../../src/mail/transports/smtp.js';
import { freePort, PROJECT_ROOT } from '../helpers/process.js';
import { type Relay, startRelay, startScriptedRelay } from '../helpers/smtp-relays.js';
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.js';

let sink: SmtpSink;
beforeAll(async () => {
  sink = await startSmtpSink();
});
afterAll(() => sink?.close());

const message = (to: string, n = 0) =>
  Buffer.from(`From: a@sender.example\r\nTo: ${to}\r\nSubject: m${n}\r\nMessage-ID: <m${n}-${to}>\r\n\r\nbody ${n}\r\n`);

describe('SMTP transport', () => {
  it('hands out at most maxConnections reservations; the next waits for a release, in order', async () => {
    const smtp = createSmtpTransport(`${sink.url}?maxConnections=2`);
    try {
      const first = await smtp.reserve();
      const second = await smtp.reserve();
      const order: string[] = [];
      const third = smtp.reserve().then((release) => (order.push('third'), release));
      const fourth = smtp.reserve().then((release) => (order.push('fourth'), release));
      // The reservations are plain promises (no I/O): whatever they would do runs in microtasks,
      // all of which run before any timer fires, so these short waits hold however loaded the machine.
      await new Promise((r) => setTimeout(r, 20));
      expect(order).toEqual([]);
      first();
      first(); // a second call releases nothing more
      const releaseThird = await third;
      await new Promise((r) => setTimeout(r, 20));
      expect(order).toEqual(['third']);
      releaseThird();
      await new Promise((r) => setTimeout(r, 20));
      expect(order).toEqual(['third', 'fourth']);
      second();
      (await fourth)();
      const again = await Promise.all([smtp.reserve(), smtp.reserve()]);
      for (const release of again) release();
    } finally {
      await smtp.close();
    }
  });

  it('delivers a raw message as is and resolves with the 250 reply', async () => {
    const smtp = createSmtpTransport(sink.url);
    try {
      const raw = message('ok@example.com');
      const accepted = await smtp.send(raw, { from: 'a@sender.example', to: 'ok@example.com' });
      expect(accepted.response).toMatch(/^250 /);
      const [got] = sink.messagesTo('ok@example.com');
      expect(got?.raw.equals(raw)).toBe(true);
      expect(got?.from).toBe('a@sender.example');
    } finally {
      await smtp.close();
    }
  });

  it('reports 5xx replies as permanent and 4xx replies as transient, with the reply text', async () => {
    const smtp = createSmtpTransport(sink.url);
    try {
      sink.reject('perm@example.com', { code: 550, message: 'No such user here' });
      sink.reject('temp@example.com', { code: 451, message: 'Try again later' });
      const perm = await smtp.send(message('perm@example.com'), { from: 'a@sender.example', to: 'perm@example.com' }).catch((e: unknown) => e);
      expect(perm).toBeInstanceOf(SmtpError);
      expect(perm).toMatchObject({ permanent: true, responseCode: 550, message: expect.stringMatching(/550 No such user here/) });
      const temp = await smtp.send(message('temp@example.com'), { from: 'a@sender.example', to: 'temp@example.com' }).catch((e: unknown) => e);
      expect(temp).toMatchObject({ permanent: false, responseCode: 451, message: expect.stringMatching(/451 Try again later/) });
    } finally {
      await smtp.close();
    }
  });

  it('reports an unreachable relay as transient', async () => {
    const smtp = createSmtpTransport(`smtp://127.0.0.1:${await freePort()}`);
    try {
      const err = await smtp.send(message('x@example.com'), { from: 'a@sender.example', to: 'x@example.com' }).catch((e: unknown) => e);
      expect(err).toMatchObject({ permanent: false, responseCode: undefined, message: expect.stringMatching(/ECONNREFUSED|ECONNECTION/) });
    } finally {
      await smtp.close();
    }
  });

  it('uses TCP_NODELAY sockets: 100 sequential messages take far less than Nagle + delayed ACK would (~40 ms each)', async () => {
    const smtp = createSmtpTransport(sink.url);
    try {
      await smtp.send(message('warm@example.com'), { from: 'a@sender.example', to: 'warm@example.com' });
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const started = performance.now();
        await smtp.send(message('seq@example.com', i), { from: 'a@sender.example', to: 'seq@example.com' });
        times.push(performance.now() - started);
      }
      // The median message, not the total: Nagle meeting the delayed ACK costs every message ~40 ms,
      // while a loaded machine stalls only some of them (a message takes ~1-3 ms here).
      const median = times.sort((a, b) => a - b)[50] ?? Infinity;
      expect(median).toBeLessThan(20);
      expect(sink.messagesTo('seq@example.com')).toHaveLength(100);
    } finally {
      await smtp.close();
    }
  });
});

describe('SMTP_URL settings', () => {
  it('takes pool settings from the URL query over the defaults and keeps projectRate for the throttle', () => {
    const options = smtpPoolOptions('smtps://user:p%40ss@relay.example:2465?maxConnections=16&rateLimit=50&projectRate=5');
    expect(options).toMatchObject({ host: 'relay.example', port: 2465, secure: true, maxConnections: 16, rateLimit: 50, maxMessages: SMTP_POOL_DEFAULTS.maxMessages });
    expect(options.auth).toEqual({ user: 'user', pass: 'p@ss' });
    expect(options).not.toHaveProperty('projectRate');
    expect(createMailTransport('smtp://relay.example?projectRate=5')).toMatchObject({ kind: 'smtp', projectRatePerSecond: 5 });
    expect(createMailTransport(undefined)).toMatchObject({ kind: 'capture' });
    expect(() => createMailTransport('smtp://relay.example?projectRate=fast')).toThrow(/projectRate/);
  });

  it('classifies errors without a reply: envelope and message refusals are permanent, others transient', () => {
    expect(classifySmtpError(Object.assign(new Error('Invalid recipient'), { code: 'EENVELOPE' })).permanent).toBe(true);
    expect(classifySmtpError(Object.assign(new Error('Message size larger than allowed 100'), { code: 'EMESSAGE' })).permanent).toBe(true);
    expect(classifySmtpError(Object.assign(new Error('Timeout'), { code: 'ETIMEDOUT' })).permanent).toBe(false);
    expect(classifySmtpError(Object.assign(new Error('x'), { code: 'EENVELOPE', responseCode: 452, response: '452 Too many' })).permanent).toBe(false);
  });
});

describe('SMTP client protocol', () => {
  const env = (to: string) => ({ from: 'a@sender.example', to });
  const relays: Relay[] = [];
  const relay = async (opts: Parameters<typeof startRelay>[0] = {}) => {
    const r = await startRelay(opts);
    relays.push(r);
    return r;
  };
  const scripted = async (...args: Parameters<typeof startScriptedRelay>) => {
    const r = await startScriptedRelay(...args);
    relays.push(r);
    return r;
  };
  afterAll(async () => {
    await Promise.all(relays.map((r) => r.close()));
  });
  async function withTransport<T>(url: string, run: (smtp: SmtpTransport) => Promise<T>): Promise<T> {
    const smtp = createSmtpTransport(url);
    try {
      return await run(smtp);
    } finally {
      await smtp.close();
    }
  }

  it('pipelines MAIL FROM, RCPT TO and DATA when the relay offers PIPELINING, one at a time when it does not', async () => {
    const withPipelining = await relay({ awaitPipelineMs: 2000 });
    await withTransport(withPipelining.url, async (smtp) => {
      for (let i = 0; i < 3; i++) await smtp.send(message('p@example.com', i), env('p@example.com'));
    });
    // The relay answered each MAIL FROM only after the RCPT TO and DATA behind it had arrived.
    expect(withPipelining.pipelined).toEqual([true, true, true]);
    expect(withPipelining.messages).toHaveLength(3);

    const without = await relay({ awaitPipelineMs: 300, server: { hidePIPELINING: true } });
    await withTransport(without.url, async (smtp) => {
      await smtp.send(message('np@example.com'), env('np@example.com'));
    });
    expect(without.pipelined).toEqual([false]);
    expect(without.messages.map((m) => m.raw.equals(message('np@example.com')))).toEqual([true]);
  });

  it('upgrades with STARTTLS when offered and authenticates with AUTH PLAIN or LOGIN; a wrong password fails', async () => {
    const users = { 'user@x': 'p@ss w:rd' };
    const tls = 'tls.rejectUnauthorized=false';
    const plain = await relay({ users, starttls: true, server: { authMethods: ['PLAIN'] } });
    const login = await relay({ users, starttls: true, server: { authMethods: ['LOGIN'] } });
    for (const r of [plain, login]) {
      const url = `smtp://${encodeURIComponent('user@x')}:${encodeURIComponent('p@ss w:rd')}@127.0.0.1:${r.port}?${tls}`;
      await withTransport(url, (smtp) => smtp.send(message('auth@example.com'), env('auth@example.com')));
      expect(r.messages.map((m) => ({ secure: m.secure, user: m.user }))).toEqual([{ secure: true, user: 'user@x' }]);
      const wrong = await withTransport(`smtp://user%40x:nope@127.0.0.1:${r.port}?${tls}`, (smtp) =>
        smtp.send(message('auth@example.com'), env('auth@example.com')).catch((e: unknown) => e),
      );
      // Classified like any reply: 535 is a 5xx, permanent.
      expect(wrong).toMatchObject({ permanent: true, responseCode: 535, message: expect.stringMatching(/^Authentication failed: 535/) });
      expect(r.messages).toHaveLength(1);
    }
    // Certificates are verified by default: the relay's self-signed one is refused (transient).
    const verified = await withTransport(`smtp://127.0.0.1:${plain.port}`, (smtp) => smtp.send(message('v@example.com'), env('v@example.com')).catch((e: unknown) => e));
    expect(verified).toMatchObject({ permanent: false, responseCode: undefined, message: expect.stringMatching(/certificate/i) });
    // ignoreTLS: stays in plain text although STARTTLS is offered.
    const offered = await relay({ starttls: true });
    await withTransport(`${offered.url}?ignoreTLS=true`, (smtp) => smtp.send(message('i@example.com'), env('i@example.com')));
    expect(offered.messages.map((m) => m.secure)).toEqual([false]);
  });

  it('speaks TLS from the start for smtps://', async () => {
    const r = await relay({ server: { secure: true } });
    await withTransport(`smtps://127.0.0.1:${r.port}?tls.rejectUnauthorized=false&tls.minVersion=TLSv1.2`, (smtp) =>
      smtp.send(message('s@example.com'), env('s@example.com')),
    );
    expect(r.messages.map((m) => ({ secure: m.secure, raw: m.raw.toString() }))).toEqual([{ secure: true, raw: message('s@example.com').toString() }]);
  });

  it('requireTLS fails (transient) against a relay without STARTTLS, before any message is sent', async () => {
    const r = await relay();
    const err = await withTransport(`${r.url}?requireTLS=true`, (smtp) => smtp.send(message('r@example.com'), env('r@example.com')).catch((e: unknown) => e));
    expect(err).toMatchObject({ permanent: false, responseCode: undefined, message: expect.stringMatching(/requireTLS/) });
    expect(r.messages).toEqual([]);
  });

  it('recycles a connection after maxMessages', async () => {
    const r = await relay();
    await withTransport(`${r.url}?maxMessages=2&maxConnections=1`, async (smtp) => {
      for (let i = 0; i < 5; i++) await smtp.send(message('mm@example.com', i), env('mm@example.com'));
    });
    expect(r.messages).toHaveLength(5);
    expect(r.connections()).toBe(3);
    // Each connection ended with QUIT: two at their 2nd message, the last one by close().
    expect(r.wire().match(/\r\nQUIT\r\n/g)).toHaveLength(3);
  });

  it('a connection the relay closed while idle does not fail the next send (421 while idle, or a drop as the client writes)', async () => {
    // smtp-server answers 421 and closes a connection idle for socketTimeout.
    const timingOut = await relay({ server: { socketTimeout: 200 } });
    await withTransport(`${timingOut.url}?maxConnections=1`, async (smtp) => {
      await smtp.send(message('idle@example.com', 1), env('idle@example.com'));
      await new Promise((r) => setTimeout(r, 600));
      await smtp.send(message('idle@example.com', 2), env('idle@example.com'));
    });
    expect(timingOut.messages).toHaveLength(2);
    expect(timingOut.connections()).toBe(2);
    // The relay drops the connection when the second transaction's MAIL FROM arrives (as a close
    // racing the client's write would): nothing was answered, the message goes on a new connection.
    const dropping = await scripted((line, conn) => (/^MAIL/.test(line) && conn.accepted === 1 ? 'drop' : undefined));
    await withTransport(`${dropping.url}?maxConnections=1`, async (smtp) => {
      await smtp.send(message('drop@example.com', 1), env('drop@example.com'));
      await smtp.send(message('drop@example.com', 2), env('drop@example.com'));
    });
    expect(dropping.messages).toHaveLength(2);
    expect(dropping.connections()).toBe(2);
  });

  it('rateLimit: at most rateLimit messages per rateDelta ms over the pool', async () => {
    const r = await relay();
    const started = Date.now();
    await withTransport(`${r.url}?rateLimit=2&rateDelta=400&maxConnections=5`, (smtp) =>
      Promise.all(Array.from({ length: 5 }, (_, i) => smtp.send(message('rate@example.com', i), env('rate@example.com')))),
    );
    // Windows of 400 ms: 2 messages, 2 more, the last one: the fifth cannot start before 800 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(790);
    expect(r.messages).toHaveLength(5);
  });

  it('reads multi-line replies: a multi-line refusal is reported whole and the connection stays in step', async () => {
    const r = await scripted((line) =>
      /^RCPT TO:<multi@/.test(line) ? '550-5.1.1 first line of the refusal\r\n550-5.1.1 second line\r\n550 5.1.1 last line' : undefined,
    );
    await withTransport(`${r.url}?maxConnections=1`, async (smtp) => {
      const err = await smtp.send(message('multi@example.com'), env('multi@example.com')).catch((e: unknown) => e);
      expect(err).toMatchObject({
        permanent: true,
        responseCode: 550,
        message: '550-5.1.1 first line of the refusal\n550-5.1.1 second line\n550 5.1.1 last line',
      });
      const ok = await smtp.send(message('fine@example.com'), env('fine@example.com'));
      expect(ok.response).toBe('250 queued');
    });
    expect(r.messages.map((m) => m.to)).toEqual([['fine@example.com']]);
    expect(r.connections()).toBe(1);
    expect(r.wire()).toMatch(/DATA\r\nRSET\r\nMAIL FROM:<a@sender.example>\r\nRCPT TO:<fine@example.com>/);
  });

  it('falls back to HELO when EHLO is refused, and then sends one command at a time', async () => {
    const r = await scripted((line) => (/^EHLO /.test(line) ? '502 no EHLO here' : undefined));
    await withTransport(r.url, (smtp) => smtp.send(message('helo@example.com'), env('helo@example.com')));
    expect(r.messages).toHaveLength(1);
    expect(r.wire()).toMatch(/^EHLO \S+\r\nHELO \S+\r\nMAIL FROM:<a@sender.example>\r\nRCPT/);
  });

  it('after a refused recipient, RSET and the next message goes through on the same connection', async () => {
    const r = await relay();
    sink.reject('nobody@example.com', { code: 451, message: 'Greylisted', times: 1 });
    await withTransport(`${sink.url}?maxConnections=1`, async (smtp) => {
      const err = await smtp.send(message('nobody@example.com'), env('nobody@example.com')).catch((e: unknown) => e);
      expect(err).toMatchObject({ permanent: false, responseCode: 451 });
      await smtp.send(message('after@example.com'), env('after@example.com'));
    });
    expect(sink.messagesTo('after@example.com')).toHaveLength(1);
    expect(sink.messagesTo('nobody@example.com')).toHaveLength(0);
    // The same on a relay that counts connections: one connection, RSET between the two.
    const refusing = await scripted((line) => (/^RCPT TO:<nobody@/.test(line) ? '550 5.1.1 No such user' : undefined));
    await withTransport(`${refusing.url}?maxConnections=1`, async (smtp) => {
      await expect(smtp.send(message('nobody@example.com'), env('nobody@example.com'))).rejects.toMatchObject({ permanent: true, responseCode: 550 });
      await smtp.send(message('after@example.com'), env('after@example.com'));
    });
    expect(refusing.messages.map((m) => m.to)).toEqual([['after@example.com']]);
    expect(refusing.connections()).toBe(1);
    expect(refusing.wire()).toMatch(/RCPT TO:<nobody@example.com>\r\nDATA\r\nRSET\r\n/);
    expect(r.messages).toEqual([]);
  });

  it('dot-stuffs: lines starting with "." (and a lone "." line) arrive intact', async () => {
    const r = await relay();
    const raw = Buffer.from('.starts with a dot\r\nSubject: dots\r\n\r\n.\r\n..two dots\r\nmiddle . dot\r\n.\r\nlast\r\n');
    await withTransport(r.url, (smtp) => smtp.send(raw, env('dots@example.com')));
    expect(r.messages[0]?.raw.toString()).toBe(raw.toString());
    // And a body without a final line end gets one before the dot.
    const open = Buffer.from('Subject: x\r\n\r\nno line end');
    await withTransport(r.url, (smtp) => smtp.send(open, env('dots@example.com')));
    expect(r.messages[1]?.raw.toString()).toBe('Subject: x\r\n\r\nno line end\r\n');
  });

  it('the gate: every byte but the final dot is on the wire while it runs; a rejection means no message; endOfDataSent after the dot', async () => {
    const r = await relay();
    const raw = message('gate@example.com');
    let seen = '';
    await withTransport(r.url, (smtp) =>
      smtp.send(raw, env('gate@example.com'), {
        beforeEndOfData: async () => {
          // Wait until the relay read the whole message, then give a dot sent too early time to show.
          for (let i = 0; i < 200 && !r.wire().includes(raw.toString()); i++) await new Promise((res) => setTimeout(res, 5));
          await new Promise((res) => setTimeout(res, 100));
          seen = r.wire();
        },
      }),
    );
    expect(seen.endsWith(`DATA\r\n${raw.toString()}`)).toBe(true);
    expect(r.messages).toHaveLength(1);

    const err = await withTransport(r.url, (smtp) =>
      smtp.send(message('gate@example.com', 2), env('gate@example.com'), { beforeEndOfData: () => Promise.reject(new Error('not committed')) }).catch((e: unknown) => e),
    );
    expect(err).toMatchObject({ endOfDataSent: false, permanent: false, message: 'not committed' });
    await new Promise((res) => setTimeout(res, 100));
    expect(r.messages).toHaveLength(1);

    // After the dot: a 5xx to it, and no reply at all (socketTimeout), both report endOfDataSent.
    const refusing = await scripted(() => undefined, '554 5.7.1 rejected after data');
    const after = await withTransport(refusing.url, (smtp) => smtp.send(message('x@example.com'), env('x@example.com'), { beforeEndOfData: async () => undefined }).catch((e: unknown) => e));
    expect(after).toMatchObject({ endOfDataSent: true, permanent: true, responseCode: 554 });
    sink.hold('silent@example.com', 'reply');
    const silent = await withTransport(`${sink.url}?socketTimeout=300`, (smtp) =>
      smtp.send(message('silent@example.com'), env('silent@example.com'), { beforeEndOfData: async () => undefined }).catch((e: unknown) => e),
    );
    sink.release();
    expect(silent).toMatchObject({ endOfDataSent: true, permanent: false, responseCode: undefined, message: expect.stringMatching(/Timeout/) });
  });

  it('SMTPUTF8 only for non-ASCII addresses, and only when offered: otherwise a permanent envelope error', async () => {
    const r = await relay();
    await withTransport(r.url, (smtp) => smtp.send(message('ascii@example.com'), env('ascii@example.com')));
    await withTransport(r.url, (smtp) => smtp.send(message('jörg@example.com'), env('jörg@example.com')));
    expect(r.messages.map((m) => m.to)).toEqual([['ascii@example.com'], ['jörg@example.com']]);
    expect(r.wire()).toMatch(/MAIL FROM:<a@sender.example>\r\n[^]*MAIL FROM:<a@sender.example> SMTPUTF8 BODY=8BITMIME\r\n/);
    const hidden = await relay({ server: { hideSMTPUTF8: true } });
    const err = await withTransport(hidden.url, (smtp) => smtp.send(message('jörg@example.com'), env('jörg@example.com')).catch((e: unknown) => e));
    expect(err).toMatchObject({ permanent: true, message: expect.stringMatching(/^EENVELOPE: .*SMTPUTF8/) });
  });

  it('an idle connection does not keep the process alive (a script that never calls close() exits)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'smtp-idle-'));
    const script = path.join(dir, 'idle.mts');
    const module = pathToFileURL(path.join(PROJECT_ROOT, 'src/mail/transports/smtp.ts')).href;
    writeFileSync(
      script,
      `import { createSmtpTransport } from '${module}';\n` +
        `const smtp = createSmtpTransport('${sink.url}');\n` +
        `await smtp.send(Buffer.from('Subject: idle\\r\\n\\r\\nbody\\r\\n'), { from: 'a@sender.example', to: 'idle-process@example.com' });\n` +
        `console.log('sent');\n`,
    );
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      // The socket timeout (60 s) is the only other thing that would end it.
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => (child.kill('SIGKILL'), resolve(null)), 30_000);
        child.on('exit', (c) => (clearTimeout(timer), resolve(c)));
      });
      expect(out.trim()).toBe('sent');
      expect(code).toBe(0);
      expect(sink.messagesTo('idle-process@example.com')).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);

  it('refuses an SMTP_URL parameter it does not know, naming the supported ones', () => {
    expect(() => createSmtpTransport(`${sink.url}?pool=true&maxConnections=2`)).toThrow(/unknown query parameter "pool"; supported: maxConnections, .*tls\.rejectUnauthorized.*projectRate/);
    expect(() => createMailTransport(`${sink.url}?secureConnection=true`)).toThrow(/"secureConnection"/);
    expect(() => createSmtpTransport(`${sink.url}?maxConnections=0`)).toThrow(/maxConnections must be a positive integer/);
  });
});
