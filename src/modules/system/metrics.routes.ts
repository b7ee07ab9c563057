import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { METRICS_CONTENT_TYPE, scrapeMetrics } from './metrics.service.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** A peer on this machine (IPv4 loopback, IPv6 loopback, or IPv4 loopback mapped into IPv6). */
const isLoopback = (address: string | undefined) =>
  address !== undefined && (address === '::1' || /^(::ffff:)?127\./.test(address));

/** Headers a reverse proxy adds: a loopback peer carrying one is relaying someone else's request. */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip'] as const;

/**
 * Who may read /metrics. With METRICS_TOKEN: whoever sends `Authorization: Bearer <token>`
 * (else 401). Without: only clients on this machine that no proxy relays (else 403 saying to set
 * the token): the counts, routes and queue sizes are not for everyone who can reach the API, and a
 * default installation (HOST=127.0.0.1) needs no set-up to scrape them locally.
 */
function checkMetricsAccess(request: FastifyRequest, token: string | undefined): void {
  if (token === undefined) {
    const relayed = FORWARDING_HEADERS.some((h) => request.headers[h] !== undefined);
    if (isLoopback(request.socket.remoteAddress) && !relayed) return;
    throw new ApiError(403, ErrorCode.FORBIDDEN, 'GET /metrics answers only clients on this machine while METRICS_TOKEN is not set', {
      suggestion: 'Set METRICS_TOKEN on the server and scrape with Authorization: Bearer <token> (docs/operations.md "Metrics and health")',
    });
  }
  const header = request.headers.authorization;
  const given = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined;
  // Compared as digests: equal lengths, and no timing hint about the token's prefix.
  if (given === undefined || !timingSafeEqual(digest(given), digest(token))) {
    throw new ApiError(401, ErrorCode.UNAUTHORIZED, given === undefined ? 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>' : 'Invalid metrics token', {
      headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
    });
  }
}

/** GET /metrics (Prometheus text format): no rate limit, its own token (docs/operations.md "Metrics and health"). */
export async function metricsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/metrics', {
    config: { auth: 'none', rateLimit: false },
    schema: {
      tags: ['System'],
      summary: 'Prometheus metrics of this process (METRICS_TOKEN bearer token; without one, local clients only)',
      description:
        'HTTP requests by route and status with latencies, the job queue by task, emails by status, delivery latency, SMTP errors, ' +
        'group-commit batch sizes, database pools, event-loop lag (docs/operations.md "Metrics and health"). ' +
        'Send `Authorization: Bearer <METRICS_TOKEN>`; when the server has no METRICS_TOKEN, only clients on its own machine are answered (others 403).',
      response: {
        200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: z.string() } } },
      },
    },
    handler: async (request, reply) => {
      checkMetricsAccess(request, deps.config.metricsToken);
      const text = await scrapeMetrics(deps.db);
      return reply.type(METRICS_CONTENT_TYPE).send(text);
    },
  });
}
