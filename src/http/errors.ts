import type { FastifyReply, FastifyRequest } from 'fastify';

/** Machine-readable error codes (DESIGN §10). */
export const ErrorCode = {
  BAD_REQUEST: 'BAD_REQUEST',
  INVALID_API_KEY: 'INVALID_API_KEY',
  UNAUTHORIZED: 'UNAUTHORIZED',
  FORBIDDEN: 'FORBIDDEN',
  PROJECT_DISABLED: 'PROJECT_DISABLED',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  CONFLICT: 'CONFLICT',
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  VALIDATION_ERROR: 'VALIDATION_ERROR',
  RATE_LIMIT_EXCEEDED: 'RATE_LIMIT_EXCEEDED',
  INTERNAL_SERVER_ERROR: 'INTERNAL_SERVER_ERROR',
  SERVICE_UNAVAILABLE: 'SERVICE_UNAVAILABLE',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** One entry of `errors[]` in the envelope. */
export interface FieldError {
  field: string;
  message: string;
  code: string;
  received?: unknown;
}

export interface ApiErrorOptions {
  errors?: FieldError[];
  details?: Record<string, unknown>;
  suggestion?: string;
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An expected failure; the error handler turns it into the spec's envelope. */
export class ApiError extends Error {
  readonly errors: FieldError[] | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly suggestion: string | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    readonly statusCode: number,
    readonly code: string,
    message: string,
    opts: ApiErrorOptions = {},
  ) {
    super(message, { cause: opts.cause });
    this.name = 'ApiError';
    this.errors = opts.errors;
    this.details = opts.details;
    this.suggestion = opts.suggestion;
    this.headers = opts.headers;
  }
}

export const VALIDATION_MESSAGE = 'Request validation failed';

export const notFound = (what = 'Resource') => new ApiError(404, ErrorCode.NOT_FOUND, `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>) =>
  new ApiError(409, ErrorCode.CONFLICT, message, { details });
export const forbidden = (message: string) => new ApiError(403, ErrorCode.FORBIDDEN, message);
export const validationError = (errors: FieldError[]) =>
  new ApiError(422, ErrorCode.VALIDATION_ERROR, VALIDATION_MESSAGE, { errors });

/**
 * A failure answered with the legacy flat body `{error: "…"}` (SPEC Errors: some 400s
 * on contacts, segments and templates). Throw it from a handler.
 */
export class LegacyBadRequest extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LegacyBadRequest';
  }
}

export interface ErrorEnvelope {
  success: false;
  /**
   * `error.message` where Plunk's clients (and many HTTP clients) look for it, followed by
   * the first field errors: such a client shows this line and nothing else.
   */
  message: string;
  error: {
    code: string;
    message: string;
    statusCode: number;
    requestId: string;
    errors?: FieldError[];
    details?: Record<string, unknown>;
    suggestion?: string;
  };
  timestamp: string;
}

/** `request` is only read for its id (a socket-level error has no request: it passes a fresh id). */
/** The top-level `message`: the error's message and, for a 422, its first fields. */
function summary(err: ApiError): string {
  if (!err.errors?.length) return err.message;
  const fields = err.errors.slice(0, 3).map((e) => `${e.field}: ${e.message}`).join('; ');
  return `${err.message}: ${fields}${err.errors.length > 3 ? '; …' : ''}`;
}

export function envelope(request: Pick<FastifyRequest, 'id'>, err: ApiError): ErrorEnvelope {
  return {
    success: false,
    message: summary(err),
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.statusCode,
      requestId: request.id,
      ...(err.errors && { errors: err.errors }),
      ...(err.details && { details: err.details }),
      ...(err.suggestion && { suggestion: err.suggestion }),
    },
    timestamp: new Date().toISOString(),
  };
}

export function sendApiError(request: FastifyRequest, reply: FastifyReply, err: ApiError): FastifyReply {
  if (err.headers) reply.headers(err.headers);
  return reply.code(err.statusCode).type('application/json; charset=utf-8').send(envelope(request, err));
}
