import type { FastifyReply, FastifyRequest } from 'fastify';

export {
  ApiError,
  type ApiErrorOptions,
  conflict,
  ErrorCode,
  type FieldError,
  forbidden,
  notFound,
  VALIDATION_MESSAGE,
  validationError,
} from '../lib/errors.js';
import type { ApiError, FieldError } from '../lib/errors.js';

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
