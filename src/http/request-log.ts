import { type FastifyBaseLogger, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

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

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
/** The levels pino knows, for loggers that cannot say whether one is enabled (no `isLevelEnabled`). */
interface LevelAware {
  isLevelEnabled?(level: string): boolean;
}

function hasKeys(object: object): boolean {
  for (const _ in object) return true;
  return false;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

/**
 * The logger of one request: the app's logger and the request's bindings (its id, then its
 * project), without a pino child per request (creating two of them — fastify's with the request
 * id, the auth hook's with the project — was ~3 % of the API's CPU at /v1/track's rate,
 * docs/performance.md). A line logged with an object is written by the app's logger with the
 * bindings first in that object, which pino writes exactly as a child would (its bindings, then
 * the object's fields); any other line (an Error or a bare message first, options on a child) goes
 * through a real pino child, made once. Lines of disabled levels cost nothing.
 */
export class RequestLogger implements FastifyBaseLogger {
  private real: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return (this.real ?? this.parent).level;
  }

  set level(level: string) {
    this.pino().level = level;
  }

  /** The pino child this logger stands for, made at the first use that needs it. */
  private pino(): FastifyBaseLogger {
    this.real ??= this.parent.child(this.bindings);
    return this.real;
  }

  private enabled(level: Level): boolean {
    const parent = this.parent as FastifyBaseLogger & LevelAware;
    return parent.isLevelEnabled ? parent.isLevelEnabled(level) : true;
  }

  private write(level: Level, args: unknown[]): void {
    if (this.real) return (this.real[level] as (...a: unknown[]) => void)(...args);
    if (!this.enabled(level)) return;
    const [first, ...rest] = args;
    if (isPlainObject(first)) return (this.parent[level] as (...a: unknown[]) => void)({ ...this.bindings, ...first }, ...rest);
    (this.pino()[level] as (...a: unknown[]) => void)(...args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    if (this.real || (options && hasKeys(options))) return this.pino().child(bindings, options);
    return new RequestLogger(this.parent, { ...this.bindings, ...bindings });
  }
}

/**
 * Fastify's `childLoggerFactory`: the request's logger ({@link RequestLogger}); a real pino
 * child when the route sets a log level or serializers of its own.
 */
export function requestLoggerFactory(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  if (hasKeys(options)) return logger.child(bindings, options);
  return new RequestLogger(logger, bindings);
}
