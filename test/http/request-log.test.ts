import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACT } from '../../src/app.js';
import { REDACTED, redactUrl, RequestLogger, requestLoggerFactory } from '../../src/http/request-log.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';

describe('redactUrl', () => {
  it.each([
    ['/t/o/abc.def', `/t/o/${REDACTED}`],
    ['/t/c/abc.def?u=x', `/t/c/${REDACTED}?${REDACTED}`],
    ['/unsubscribe/tok', `/unsubscribe/${REDACTED}`],
    ['/subscribe/tok', `/subscribe/${REDACTED}`],
    ['/manage/tok/extra', `/manage/${REDACTED}`],
    ['/MANAGE/tok', `/MANAGE/${REDACTED}`],
    ['//t/o/tok', `//t/o/${REDACTED}`],
    ['/contacts?search=ada&page=2', `/contacts?search=${REDACTED}&page=2`],
    ['/contacts?page=2&Email=a%40b.c&token=x&x=1', `/contacts?page=2&Email=${REDACTED}&token=${REDACTED}&x=1`],
    ['/contacts?%73earch=ada', `/contacts?%73earch=${REDACTED}`],
    ['/contacts?%E0=1', `/contacts?${REDACTED}`],
    ['/contacts', '/contacts'],
    ['/manager/x', '/manager/x'],
    ['/templates?page=1', '/templates?page=1'],
  ])('%s → %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });
});

describe('request logs', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  let t: TestApp;
  let project: TestProject;
  beforeAll(async () => {
    t = await createTestApp({ logger: pino({ level: 'info', redact: REDACT }, sink) });
    ({ project } = await newProject(t.app));
  });
  afterAll(() => t.close());

  it('never contain link tokens, search terms or addresses from URLs', async () => {
    // A correctly signed token (of some purpose), as a link in an email carries.
    const token = t.deps.tokens.sign('unsubscribe', { contact: '00000000-0000-7000-8000-000000000000' });
    const secrets = [token, 'secret-search-term', 'needle@example.com', 'tok-0123456789'];
    const urls = [
      `/t/o/${token}`,
      `/t/c/${token}`,
      `/unsubscribe/${token}`,
      `/subscribe/${token}`,
      `/manage/${token}`,
      `/unsubscribe/tok-0123456789?x=1`,
      '/contacts?search=secret-search-term',
      '/contacts?email=needle%40example.com',
      '/v1/verify?token=tok-0123456789',
    ];
    for (const url of urls) await t.app.inject({ method: 'GET', url, headers: bearer(project.secret) });
    const requestLines = lines.map((l) => JSON.parse(l) as { req?: { url: string } }).filter((l) => l.req);
    expect(requestLines.length).toBeGreaterThanOrEqual(urls.length);
    expect(requestLines.every((l) => !l.req?.url.includes('tok-'))).toBe(true);
    const all = lines.join('\n');
    for (const secret of secrets) expect(all).not.toContain(secret);
    expect(all).not.toContain('needle%40example.com');
    expect(all).toContain(`/contacts?search=${REDACTED}`);
    expect(all).toContain(`/t/o/${REDACTED}`);
  });

  it('write one line per request at info: method, redacted URL, status, time and project', async () => {
    lines.length = 0;
    const res = await t.app.inject({ method: 'GET', url: '/contacts?search=x&limit=1', headers: bearer(project.secret) });
    expect(res.statusCode).toBe(200);
    const requestId = res.headers['x-request-id'];
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const mine = parsed.filter((l) => l.req || l.res);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      msg: 'request completed',
      req: { method: 'GET', url: `/contacts?search=${REDACTED}&limit=1` },
      res: { statusCode: 200 },
      projectId: project.id,
    });
    expect(typeof mine[0]?.responseTime).toBe('number');
    if (typeof requestId === 'string') expect(mine[0]?.requestId).toBe(requestId);
  });
});

describe('RequestLogger (each request’s logger, without a pino child per request)', () => {
  /** A pino logger writing into `lines`, configured as the server's (redaction included). */
  function capture() {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    return { lines, log: pino({ level: 'info', redact: REDACT }, sink) };
  }
  const withoutTime = (line: Record<string, unknown> | undefined) => {
    const { time: _time, ...rest } = line ?? {};
    return rest;
  };

  it('writes the lines a pino child with the same bindings writes, byte for byte but the time', () => {
    const lazy = capture();
    const real = capture();
    const bindings = { requestId: 'r-1' };
    const logger = new RequestLogger(lazy.log, bindings).child({ projectId: 'p-1' });
    const child = real.log.child(bindings).child({ projectId: 'p-1' });
    const err = new Error('boom');
    for (const l of [logger, child]) {
      l.info({ res: { statusCode: 200 }, responseTime: 1.5, user: { password: 'hunter2' } }, 'request completed');
      l.error({ err }, 'request failed');
      l.warn(err);
      l.info('bare %s', 'message');
      l.debug({ hidden: true }, 'below the level');
    }
    expect(lazy.lines).toHaveLength(4);
    expect(lazy.lines.map(withoutTime)).toEqual(real.lines.map(withoutTime));
    expect(lazy.lines[0]).toMatchObject({ requestId: 'r-1', projectId: 'p-1', msg: 'request completed', user: { password: '[Redacted]' } });
    expect(Object.keys(lazy.lines[0] ?? {})).toEqual(Object.keys(real.lines[0] ?? {}));
  });

  it('makes no pino child for a line with an object, nor for a disabled level; one for an Error', () => {
    const { log } = capture();
    let children = 0;
    const counting = Object.assign(Object.create(log) as typeof log, {
      child: (...args: Parameters<typeof log.child>) => {
        children++;
        return log.child(...args);
      },
    });
    const logger = requestLoggerFactory(counting, { requestId: 'r-2' }, {}).child({ projectId: 'p-2' });
    logger.info({ responseTime: 1 }, 'request completed');
    logger.debug({ a: 1 }, 'incoming request');
    expect(children).toBe(0);
    logger.error(new Error('x'));
    logger.error(new Error('y'));
    expect(children).toBe(1);
  });

  it('a child with options of its own is a real pino child', () => {
    const { log } = capture();
    const logger = requestLoggerFactory(log, { requestId: 'r-3' }, { level: 'debug' });
    expect(logger).not.toBeInstanceOf(RequestLogger);
    expect(logger.level).toBe('debug');
  });
});
