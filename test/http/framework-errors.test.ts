import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PATH_PARAM_LENGTH } from '../../src/app.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { expectEnvelope } from '../helpers/envelope.js';

// Found by the request fuzzer (test/fuzz): Fastify's router answered these itself, outside the
// envelope, and refused path parameters over 100 characters that the API documents as valid.
let t: TestApp;
let project: TestProject;
beforeAll(async () => {
  t = await createTestApp();
  ({ project } = await newProject(t.app));
});
afterAll(() => t.close());

describe('what the router refuses before any route runs', () => {
  it('answers a path with broken percent-encoding with a 400 in the envelope', async () => {
    for (const url of ['/contacts/%', '/segments/%ED%A0%80/refresh', '/events/%zz/usage']) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(project.secret) });
      expect(expectEnvelope(res, 400, 'BAD_REQUEST').message, url).toMatch(/percent-encoding/);
    }
  });

  it('answers a path parameter over the router limit with a 414 in the envelope', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/contacts/${'x'.repeat(MAX_PATH_PARAM_LENGTH + 1)}`, headers: bearer(project.secret) });
    expectEnvelope(res, 414, 'BAD_REQUEST');
  });

  it('routes the longest documented values: a 254-character suppressed address, a 255-character event name', async () => {
    const email = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
    expect(email).toHaveLength(254);
    const added = await t.app.inject({ method: 'POST', url: '/suppressions', headers: bearer(project.secret), payload: { email } });
    expect(added.statusCode, added.body).toBeLessThan(300);
    const removed = await t.app.inject({ method: 'DELETE', url: `/suppressions/${encodeURIComponent(email)}`, headers: bearer(project.secret) });
    expect(removed.statusCode, removed.body).toBeLessThan(300);

    const event = 'e'.repeat(255);
    const usage = await t.app.inject({ method: 'GET', url: `/events/${event}/usage`, headers: bearer(project.secret) });
    expect(usage.statusCode, usage.body).toBe(200);
  });
});
