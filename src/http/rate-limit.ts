import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { routeConfig } from './context.js';
import { ApiError, ErrorCode } from './errors.js';

const WINDOW_MS = 60_000;

/** Counts hits of a key within the current fixed one-minute window. */
export interface RateLimitStore {
  /**
   * Increments and returns the count for `key` in the window starting at `windowStart`: at once
   * when the store can (in memory: no promise per request), else once the store answers.
   */
  hit(key: string, windowStart: number): number | Promise<number>;
  close(): Promise<void>;
}

/** Per-process counters; the default when REDIS_URL is unset. */
export function memoryStore(): RateLimitStore {
  let window = 0;
  let counts = new Map<string, number>();
  return {
    hit(key, windowStart) {
      if (windowStart !== window) {
        window = windowStart;
        counts = new Map();
      }
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      return n;
    },
    async close() {},
  };
}

/**
 * Counters shared by every API process through Redis (INCR + PEXPIRE in one round trip). ioredis
 * is loaded only here, with REDIS_URL (~2 MB of heap otherwise held for nothing).
 */
export function redisStore(url: string, onError: (err: unknown) => void): RateLimitStore {
  const client = import('ioredis').then(({ Redis }) => {
    const redis = new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    redis.on('error', onError);
    return redis;
  });
  return {
    async hit(key, windowStart) {
      const redis = await client;
      const redisKey = `ratelimit:${key}:${windowStart}`;
      const result = await redis.multi().incr(redisKey).pexpire(redisKey, WINDOW_MS * 2).exec();
      const count = result?.[0]?.[1];
      if (typeof count !== 'number') throw new Error('unexpected Redis reply');
      return count;
    },
    async close() {
      const redis = await client;
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

function limitKey(request: FastifyRequest): string | undefined {
  const mode = routeConfig(request).rateLimit;
  if (mode === false) return undefined;
  if (mode === 'ip') return `ip:${request.ip}`;
  return request.project ? `project:${request.project.id}` : undefined;
}

function setHeaders(reply: FastifyReply, limit: number, remaining: number, resetSeconds: number): void {
  reply.header('RateLimit-Limit', limit);
  reply.header('RateLimit-Remaining', Math.max(0, remaining));
  reply.header('RateLimit-Reset', resetSeconds);
}

/**
 * Fixed one-minute windows per project (`limit`), or per client IP on sign-in routes
 * (`ipLimit`: much lower, as each sign-in costs an argon2 hash). Over the limit: 429
 * RATE_LIMIT_EXCEEDED with Retry-After. A store failure lets requests through (logged)
 * rather than taking the API down with Redis.
 */
export const rateLimitPlugin = fp(
  async (app: FastifyInstance, opts: { limit: number; ipLimit: number; store: RateLimitStore }) => {
    // A callback hook: with the memory store, no promise per request.
    app.addHook('onRequest', (request, reply, done) => {
      const key = limitKey(request);
      if (!key) return done();
      const byAddress = routeConfig(request).rateLimit === 'ip';
      const limit = byAddress ? opts.ipLimit : opts.limit;
      const now = Date.now();
      const windowStart = now - (now % WINDOW_MS);
      const resetSeconds = Math.ceil((windowStart + WINDOW_MS - now) / 1000);
      const allowAnyway = (err: unknown) => {
        request.log.warn({ err }, 'rate-limit store unavailable; request allowed');
        done();
      };
      const judge = (count: number) => {
        setHeaders(reply, limit, limit - count, resetSeconds);
        if (count <= limit) return done();
        const message = byAddress
          ? `Too many sign-in requests from this address: the limit is ${limit} per minute`
          : `Rate limit of ${limit} requests per minute exceeded`;
        done(
          new ApiError(429, ErrorCode.RATE_LIMIT_EXCEEDED, message, {
            headers: { 'Retry-After': String(resetSeconds) },
            suggestion: `Retry after ${resetSeconds} seconds`,
          }),
        );
      };
      let hit: number | Promise<number>;
      try {
        hit = opts.store.hit(key, windowStart);
      } catch (err) {
        return allowAnyway(err);
      }
      if (typeof hit === 'number') return judge(hit);
      hit.then(judge, allowAnyway);
    });
    app.addHook('onClose', async () => opts.store.close());
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
