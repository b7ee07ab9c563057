import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisStore } from '../../src/http/rate-limit.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { bearer, newProject, type TestProject } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';
import { hasRedis, startRedis } from '../helpers/redis.js';

const LIMIT = 5;
const env = { RATE_LIMIT_PER_MINUTE: String(LIMIT) };
const addProbe = (app: FastifyInstance) => app.get('/__test/ping', async () => ({ ok: true }));
const ping = (app: FastifyInstance, p: TestProject) => app.inject({ method: 'GET', url: '/__test/ping', headers: bearer(p.secret) });

/**
 * Requests land in one fixed window unless the minute turns mid-test; wait past a boundary that
 * is too close. 10 s: the longest case (four sign-ins, each an argon2 check) takes well under a
 * second alone and a few seconds at worst on a loaded two-core machine.
 */
async function awayFromWindowEdge(): Promise<void> {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 10_000) await new Promise((r) => setTimeout(r, left + 50));
}

describe('rate limit (in memory)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env, extend: addProbe });
  });
  afterAll(() => t.close());

  it('counts down RateLimit-Remaining, then answers 429 with Retry-After and RateLimit headers', async () => {
    const { project } = await newProject(t.app);
    await awayFromWindowEdge();
    for (let i = 1; i <= LIMIT; i++) {
      const res = await ping(t.app, project);
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
      expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - i));
    }
    const over = await ping(t.app, project);
    const error = expectEnvelope(over, 429, 'RATE_LIMIT_EXCEEDED');
    expect(error.message).toMatch(/5 requests per minute/);
    const retryAfter = Number(over.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(over.headers['ratelimit-remaining']).toBe('0');
    expect(over.headers['ratelimit-reset']).toBe(String(retryAfter));
  });

  it("never limits one project for another project's burst", async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    await awayFromWindowEdge();
    for (let i = 0; i <= LIMIT; i++) await ping(t.app, a.project);
    expect((await ping(t.app, a.project)).statusCode).toBe(429);
    const other = await ping(t.app, b.project);
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
  });

  it('limits sign-in and sign-up per client address with their own, lower limit', async () => {
    // The project limit is the test default (1,000,000): only SIGNIN_RATE_LIMIT_PER_MINUTE can answer 429.
    const signin = await createTestApp({ env: { SIGNIN_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      await awayFromWindowEdge();
      const from = (remoteAddress: string, url = '/auth/login') =>
        signin.app.inject({ method: 'POST', url, payload: { email: `${remoteAddress}@example.com`, password: 'wrong-password' }, remoteAddress });
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await from('203.0.113.7')).statusCode);
      const over = await from('203.0.113.7', '/auth/signup');
      expect(statuses).toEqual([401, 401, 401]);
      const error = expectEnvelope(over, 429, 'RATE_LIMIT_EXCEEDED');
      expect(error.message).toMatch(/sign-in requests from this address/);
      expect(over.headers['ratelimit-limit']).toBe('3');
      expect(over.headers['retry-after']).toMatch(/^\d+$/);
      expect((await from('203.0.113.8')).statusCode).toBe(401);
    } finally {
      await signin.close();
    }
  });

  it('does not count health checks', async () => {
    for (let i = 0; i <= LIMIT + 1; i++) expect((await t.app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });
});

// Starts its own redis-server on a free loopback port; skipped only where none is installed
// (`.ci/run` installs Debian's redis-server, so CI runs it).
describe.skipIf(!hasRedis())('rate limit (shared through Redis)', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    redis = await startRedis();
    const store = () => redisStore(redis.url, () => undefined);
    a = await createTestApp({ env, extend: addProbe, store: store() });
    b = await createTestApp({ env, extend: addProbe, store: store() });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
  });

  it('shares one budget between two API processes', async () => {
    const { project } = await newProject(a.app);
    await awayFromWindowEdge();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 1; i++) statuses.push((await ping(i % 2 ? b.app : a.app, project)).statusCode);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });
});

// Needs no Redis server at all (nothing listens on port 1), so it never skips.
describe('rate limit (Redis unreachable)', () => {
  it('lets requests through when Redis is unreachable', async () => {
    const down = await createTestApp({ env, extend: addProbe, store: redisStore('redis://127.0.0.1:1', () => undefined) });
    try {
      const { project } = await newProject(down.app);
      for (let i = 0; i < LIMIT + 2; i++) expect((await ping(down.app, project)).statusCode).toBe(200);
    } finally {
      await down.close();
    }
  });
});
