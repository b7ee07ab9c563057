import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';
import { AuthMode, routeConfig } from './context.js';
import type { MethodsAt } from './route-index.js';

/** Request headers a web page may send to a public route (the key, JSON, idempotency). */
export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key';
/** Answer headers a web page may read beyond the safelisted ones. */
export const CORS_EXPOSE_HEADERS = 'X-Request-Id, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After';
/** How long a browser may reuse a preflight answer (Chromium caps it at 2 hours). */
export const CORS_MAX_AGE_SECONDS = 7200;

/** Any origin may read the answer; never with credentials (a key travels in Authorization). */
export function allowAnyOrigin(reply: FastifyReply): FastifyReply {
  return reply.headers({ 'access-control-allow-origin': '*', 'access-control-expose-headers': CORS_EXPOSE_HEADERS });
}

/** `Allow` of a path: its methods, plus OPTIONS, which every existing path answers. */
export const allowHeader = (at: MethodsAt) => [...at.methods, 'OPTIONS'].join(', ');

/**
 * OPTIONS on an existing path: 204 with `Allow`. CORS is granted only for the methods whose
 * route there is `public` (POST /v1/track): secret-key and cookie routes never get a
 * wildcard origin, so a page elsewhere can neither read them nor ride on a session cookie.
 */
export function answerOptions(reply: FastifyReply, at: MethodsAt): FastifyReply {
  reply.header('allow', allowHeader(at));
  if (at.publicMethods.size > 0) {
    allowAnyOrigin(reply).headers({
      'access-control-allow-methods': [...at.publicMethods].join(', '),
      'access-control-allow-headers': CORS_ALLOW_HEADERS,
      'access-control-max-age': String(CORS_MAX_AGE_SECONDS),
    });
  }
  return reply.code(204).send();
}

/**
 * Routes declared `auth: 'public'` answer every origin, errors included (a page must be able
 * to read a 401 or 422). Registered before authentication so its failures carry the header.
 */
export const corsPlugin = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (request, reply, done) => {
      if (routeConfig(request).auth === AuthMode.public) allowAnyOrigin(reply);
      done();
    });
  },
  { name: 'cors' },
);
