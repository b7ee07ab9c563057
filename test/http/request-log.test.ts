import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDACT } from '../../src/app.js';
import { REDACTED, redactUrl } from '../../src/http/request-log.js';
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
