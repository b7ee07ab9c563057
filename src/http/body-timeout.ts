import { randomUUID } from 'node:crypto';
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { routeConfig } from './context.js';
import { ApiError, envelope, ErrorCode } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `upload`: the route receives a file and gets UPLOAD_TIMEOUT_SECONDS for its body. */
    bodyTimeout?: 'upload';
  }
  interface FastifyRequest {
    /**
     * Set while a body is on its way; aborted (reason: the 408 ApiError) when it has not fully
     * arrived by the route's deadline. Routes that read the raw body themselves (uploads) stop on it.
     */
    bodyDeadline?: AbortSignal;
  }
}

/** After a 408, how long a client that keeps sending may hold the socket before it is cut. */
const CLOSE_GRACE_MS = 2000;

/** Node's own request timeout, a backstop behind the per-route deadlines: later than all of them. */
export const serverRequestTimeoutMs = (opts: BodyTimeouts) => Math.max(opts.bodyMs, opts.uploadMs) + 10_000;

export interface BodyTimeouts {
  /** JSON, form and text bodies; also the header section (Node's headersTimeout, against slowloris). */
  bodyMs: number;
  /** Routes declaring `config.bodyTimeout: 'upload'`. */
  uploadMs: number;
}

const requestTimeout = (ms: number) =>
  new ApiError(408, ErrorCode.REQUEST_TIMEOUT, `The request body did not arrive within ${ms / 1000} s`, {
    headers: { connection: 'close' },
    suggestion: 'Send the body without pauses; on a slow link, send smaller requests',
  });

/**
 * The body as the content-type parsers read it, failing with the 408 at the deadline. It reads
 * the request only once a parser reads it: routes whose handler reads the raw request itself
 * (multipart uploads) never have a second reader competing for the bytes.
 */
class DeadlineBody extends Readable {
  private attached = false;
  private readonly onData = (chunk: Buffer) => {
    if (!this.push(chunk)) this.source.pause();
  };
  private readonly onEnd = () => this.push(null);
  private readonly onError = (err: Error) => this.destroy(err);

  constructor(
    private readonly source: Readable,
    private readonly signal: AbortSignal,
  ) {
    super();
  }

  override _read(): void {
    if (this.attached) {
      this.source.resume();
      return;
    }
    // Only a parser that reads gets the 408 as a stream error (an unread stream has no listener).
    this.attached = true;
    const abort = () => {
      this.destroy(this.signal.reason as Error);
    };
    if (this.signal.aborted) return abort();
    this.signal.addEventListener('abort', abort, { once: true });
    this.source.on('data', this.onData).once('end', this.onEnd).once('error', this.onError);
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.source.off('data', this.onData).off('end', this.onEnd).off('error', this.onError);
    callback(err);
  }
}

/** After the 408 has been written: discard what still comes, and cut the socket shortly after. */
function closeAfterAnswer(raw: IncomingMessage, answer: NodeJS.EventEmitter): void {
  answer.once('finish', () => {
    raw.resume();
    setTimeout(() => raw.socket.destroy(), CLOSE_GRACE_MS).unref();
  });
}

/** A request whose headers say it has no body (no Content-Length, or 0, and no Transfer-Encoding). */
const hasNoBody = (raw: IncomingMessage) =>
  raw.headers['transfer-encoding'] === undefined && (raw.headers['content-length'] === undefined || raw.headers['content-length'] === '0');

/**
 * Runs the callbacks queued during this turn of the event loop once the reads of this turn have
 * been handled (one setImmediate for all of them). The hooks before preParsing run as soon as
 * the request's headers are parsed, before Node's HTTP parser goes on with the rest of the same
 * read: a small body that came with its headers is complete by then.
 */
function afterThisRead(): (run: () => void) => void {
  let queued: (() => void)[] = [];
  const drain = () => {
    const runs = queued;
    queued = [];
    for (const run of runs) {
      try {
        run();
      } catch (err) {
        // Thrown as it would have been without the queue, after the others had their turn.
        process.nextTick(() => {
          throw err;
        });
      }
    }
  };
  return (run) => {
    if (queued.length === 0) setImmediate(drain);
    queued.push(run);
  };
}

/**
 * Every request body must arrive within its route's deadline (`bodyMs`, or `uploadMs` for
 * `config.bodyTimeout: 'upload'`), counted from when the request is routed. A late body is
 * answered 408 REQUEST_TIMEOUT and the connection closed; the timer costs nothing once the
 * body is complete. Nothing here holds a database connection: see docs/operations.md.
 *
 * A body that is complete once the read that brought its headers is handled (nearly every API
 * call) goes to the parser as it is: no timer, no wrapper stream (at /v1/track's rate they were
 * a few percent of the API's CPU, docs/performance.md). The others, and every upload (whose
 * route reads `request.bodyDeadline`), get the deadline.
 */
export const bodyTimeoutPlugin = fp(
  async (app: FastifyInstance, opts: BodyTimeouts) => {
    app.decorateRequest('bodyDeadline', undefined);
    const later = afterThisRead();
    const withDeadline = (request: FastifyRequest, reply: FastifyReply, payload: Readable, ms: number): Readable => {
      const controller = new AbortController();
      const timer = setTimeout(
        () => {
          if (request.raw.complete) return;
          closeAfterAnswer(request.raw, reply.raw);
          controller.abort(requestTimeout(ms));
        },
        // From when the request was routed, whatever the wait for the read took.
        Math.max(0, ms - reply.elapsedTime),
      );
      reply.raw.once('close', () => clearTimeout(timer));
      request.bodyDeadline = controller.signal;
      return new DeadlineBody(payload, controller.signal);
    };
    app.addHook('preParsing', (request, reply, payload, done) => {
      const raw = request.raw;
      if (raw.complete || hasNoBody(raw)) return done(null, payload);
      if (routeConfig(request).bodyTimeout === 'upload') return done(null, withDeadline(request, reply, payload, opts.uploadMs));
      later(() => done(null, raw.complete ? payload : withDeadline(request, reply, payload, opts.bodyMs)));
    });
  },
  { name: 'body-timeout' },
);

/**
 * `work` (which reads the raw request body), or the 408 when the body deadline passes first.
 * For routes that read the body themselves; parsed bodies are covered by the plugin.
 */
export async function beforeBodyDeadline<T>(request: FastifyRequest, work: Promise<T>): Promise<T> {
  const signal = request.bodyDeadline;
  if (!signal) return work;
  if (signal.aborted) {
    work.catch(() => undefined);
    throw signal.reason;
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Node's `socket._httpMessage`: the response in progress on the socket, if any. */
interface SocketWithResponse {
  _httpMessage?: { headersSent?: boolean };
}

/**
 * Fastify's `clientErrorHandler`: errors Node raises before a request reaches the app (its
 * request and header timeouts, malformed HTTP), answered in the error envelope when nothing
 * has been written on the socket yet, then the socket is closed.
 */
export function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? new ApiError(408, ErrorCode.REQUEST_TIMEOUT, 'The request did not arrive in time')
    : err.code === 'HPE_HEADER_OVERFLOW' ? new ApiError(431, ErrorCode.BAD_REQUEST, 'The request headers are too large')
    : new ApiError(400, ErrorCode.BAD_REQUEST, 'Malformed HTTP request');
  this.log.debug({ err }, 'client error');
  const started = (socket as Socket & SocketWithResponse)._httpMessage?.headersSent === true;
  if (socket.writable && !started) {
    const body = JSON.stringify(envelope({ id: randomUUID() }, error));
    socket.write(
      `HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode] ?? ''}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
