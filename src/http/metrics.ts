import type { FastifyInstance } from 'fastify';
import { collectProcessMetrics, httpRequestDuration } from '../lib/metrics.js';
import { routeConfig } from './context.js';

/** The route label of requests no route matched (404, 405 and OPTIONS answered by unmatched.ts). */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Records every answered request in `mailplatform_http_request_duration_seconds` under its route
 * pattern (`/contacts/:id`, never the URL), method and status, when its response is done. Per
 * request: one cached config read (context.ts) and one histogram observation, nothing awaited.
 */
export function registerRequestMetrics(app: FastifyInstance): void {
  collectProcessMetrics();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.is404 ? UNMATCHED_ROUTE : (routeConfig(request).url ?? UNMATCHED_ROUTE);
    httpRequestDuration.observe({ route, method: request.method, status_code: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });
}
