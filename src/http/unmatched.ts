import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { allowAnyOrigin, allowHeader, answerOptions } from './cors.js';
import { ApiError, ErrorCode, sendApiError } from './errors.js';
import { buildRouteIndex, type IndexedRoute, type MethodsAt } from './route-index.js';

const pathOf = (url: string) => url.split('?')[0] ?? url;

/**
 * The not-found handler: OPTIONS on an existing path answers (with CORS where the route is
 * public), another method on an existing path is 405 with `Allow`, anything else is 404.
 * The methods come from the registered routes, indexed on first use (after `ready`, when
 * no route can be added any more).
 */
export function unmatchedHandler(routes: () => readonly IndexedRoute[]) {
  let methodsAt: ((path: string) => MethodsAt) | undefined;
  return (request: FastifyRequest, reply: FastifyReply) => {
    methodsAt ??= buildRouteIndex(routes());
    const path = pathOf(request.url);
    const at = methodsAt(path);
    if (at.methods.size === 0) {
      return sendApiError(request, reply, new ApiError(404, ErrorCode.NOT_FOUND, `Route ${request.method} ${path} not found`));
    }
    if (request.method === 'OPTIONS') return answerOptions(reply, at);
    if (at.publicMethods.size > 0) allowAnyOrigin(reply);
    const allow = allowHeader(at);
    return sendApiError(
      request,
      reply,
      new ApiError(405, ErrorCode.METHOD_NOT_ALLOWED, `Method ${request.method} is not allowed on ${path}; allowed: ${allow}`, {
        headers: { allow },
      }),
    );
  };
}

/** What a route reads, for a 415: its declared `consumes`, else JSON when it has a body schema. */
export function unsupportedMediaTypeMessage(request: FastifyRequest): string {
  const received = request.headers['content-type'];
  const got = received ? `Content-Type \`${received.split(';')[0]}\` is not accepted here` : 'The request has a body but no Content-Type';
  const schema = request.routeOptions.schema;
  const consumes = schema && 'consumes' in schema && Array.isArray(schema.consumes) ? schema.consumes.map(String) : [];
  if (consumes.length > 0) return `${got}: send ${consumes.map((c) => `\`Content-Type: ${c}\``).join(' or ')}`;
  return `${got}: send the body as JSON with \`Content-Type: application/json\``;
}

/** Registers the not-found handler over the app's route catalog. */
export function registerUnmatched(app: FastifyInstance, routes: () => readonly IndexedRoute[]): void {
  app.setNotFoundHandler(unmatchedHandler(routes));
}
