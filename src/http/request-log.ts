import { type FastifyReply, type FastifyRequest, LogController } from 'fastify';

/** Paths whose rest is a bearer token (tracking pixel and links, unsubscribe/subscribe/manage pages). */
const TOKEN_PATH = /^(\/+(?:t\/[oc]|unsubscribe|subscribe|manage))(?:\/|$)/i;
/** Query parameters that carry a token or personal data (search terms, addresses). */
const SECRET_PARAMS = new Set(['search', 'token', 'email']);
export const REDACTED = '[redacted]';

/**
 * The URL as it may be logged: the token of a token path and the values of token, search and
 * email parameters replaced, so logs never hold a working link or what someone searched for.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q + 1);
  const token = TOKEN_PATH.exec(path);
  // A token path's query is dropped whole: nothing in it is needed to read the log.
  if (token) return `${token[1]}/${REDACTED}${query ? `?${REDACTED}` : ''}`;
  if (!query) return path;
  const params = query.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    let name: string;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      return REDACTED; // a name that does not decode cannot be vetted
    }
    return SECRET_PARAMS.has(name.trim().toLowerCase()) ? `${rawName}=${REDACTED}` : pair;
  });
  return `${path}?${params.join('&')}`;
}

/** fastify's `req` log serializer with the URL redacted (the other fields as fastify logs them). */
export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/**
 * One log line per request, written when it completes (with the request, the status and the
 * time taken), instead of fastify's two (`incoming request` at the start, `request completed` at
 * the end), with the project when there is one: at /v1/track's rate the second line was a few percent of the API's CPU for nothing
 * the first did not say (docs/performance.md). At `debug` the start of each request is logged too.
 */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // request.log: the child the auth hook bound the project to (reply.log was made before it).
    if (error) request.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else request.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}
