import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailTransport } from '../../src/mail/transports/index.js';
import { classifySmtpError, createSmtpTransport, SMTP_POOL_DEFAULTS, SmtpError, smtpPoolOptions } from '../../src/mail/transports/smtp.js';
import { freePort } from '../helpers/process.js';
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
    expect(options).toMatchObject({ host: 'relay.example', port: 2465, secure: true, pool: true, maxConnections: 16, rateLimit: 50, maxMessages: SMTP_POOL_DEFAULTS.maxMessages });
    expect(options.auth).toMatchObject({ user: 'user' });
    expect(options).not.toHaveProperty('projectRate');
    expect(typeof options.getSocket).toBe('function');
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
