/**
 * The service's expected failures, independent of HTTP: `ApiError(status, code, message)` and
 * its codes, thrown by services, the condition compiler and jobs alike; `http/errors.ts`
 * re-exports them and shapes the envelope.
 */

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
