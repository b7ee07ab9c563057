import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ZodError } from 'zod';
import { DatabaseBusyError } from '../db/connection.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { ApiError, ErrorCode, LegacyBadRequest, sendApiError, VALIDATION_MESSAGE } from './errors.js';
import { unsupportedMediaTypeMessage } from './unmatched.js';
import { toFieldErrors, zodToFieldErrors } from './validation.js';

/** Fastify's own client errors, with the message a caller can act on. */
const FASTIFY_ERRORS: Record<string, { status: number; code: string; message?: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: ErrorCode.BAD_REQUEST, message: 'Malformed JSON in request body' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: ErrorCode.BAD_REQUEST, message: 'Body cannot be empty when Content-Type is application/json' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: ErrorCode.PAYLOAD_TOO_LARGE, message: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: ErrorCode.UNSUPPORTED_MEDIA_TYPE },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: ErrorCode.BAD_REQUEST },
};

function validatedInput(request: FastifyRequest, context: string | undefined): unknown {
  if (context === 'body') return request.body;
  if (context === 'querystring') return request.query;
  if (context === 'params') return request.params;
  if (context === 'headers') return request.headers;
  return undefined;
}

/** Seconds a client is told to wait when every database connection is busy. */
const BUSY_RETRY_AFTER_SECONDS = 2;
/** Seconds a client is told to wait when PostgreSQL is down or restarting (a restart takes a few). */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

function toApiError(err: unknown, request: FastifyRequest): ApiError | undefined {
  if (err instanceof ApiError) return err;
  if (err instanceof DatabaseBusyError) {
    return new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'The service is busy: no database connection became free in time', {
      headers: { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
      suggestion: `Retry in ${BUSY_RETRY_AFTER_SECONDS} seconds`,
      cause: err,
    });
  }
  if (isDatabaseUnavailable(err)) {
    return new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'The database is not reachable right now', {
      headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
      suggestion: `Retry in ${UNAVAILABLE_RETRY_AFTER_SECONDS} seconds (with the same Idempotency-Key, if the request had one)`,
      cause: err,
    });
  }
  if (err instanceof ZodError) {
    return new ApiError(422, ErrorCode.VALIDATION_ERROR, VALIDATION_MESSAGE, { errors: zodToFieldErrors(err) });
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const context = 'validationContext' in err ? String(err.validationContext) : undefined;
    return new ApiError(422, ErrorCode.VALIDATION_ERROR, VALIDATION_MESSAGE, {
      errors: toFieldErrors(err.validation, context, validatedInput(request, context)),
    });
  }
  const fe = err as Partial<FastifyError>;
  const known = fe.code ? FASTIFY_ERRORS[fe.code] : undefined;
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new ApiError(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, unsupportedMediaTypeMessage(request));
  if (known) return new ApiError(known.status, known.code, known.message ?? fe.message ?? 'Bad request');
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError(fe.statusCode, fe.statusCode === 404 ? ErrorCode.NOT_FOUND : ErrorCode.BAD_REQUEST, fe.message ?? 'Bad request');
  }
  return undefined;
}

/** One place shapes every failure into the spec's envelope; 5xx messages are masked. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request, reply) => {
    if (err instanceof LegacyBadRequest) return reply.code(400).send({ error: err.message });
    const apiError = toApiError(err, request);
    if (apiError) {
      if (apiError.statusCode >= 500) request.log.error({ err }, 'request failed');
      return sendApiError(request, reply, apiError);
    }
    request.log.error({ err }, 'unhandled error');
    return sendApiError(
      request,
      reply,
      new ApiError(500, ErrorCode.INTERNAL_SERVER_ERROR, 'An unexpected error occurred', {
        suggestion: `Retry later; if it persists, contact the operator with requestId ${request.id}`,
      }),
    );
  });
}

/**
 * Fastify's `frameworkErrors`: what its router refuses before any route or hook runs (a path
 * with broken percent-encoding, a parameter over `maxParamLength`), in the envelope rather than
 * Fastify's own body.
 */
export function frameworkErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('X-Request-Id', request.id);
  const apiError =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? new ApiError(414, ErrorCode.BAD_REQUEST, 'A path segment of the URL is too long')
      : new ApiError(400, ErrorCode.BAD_REQUEST, 'The URL is malformed (invalid percent-encoding)');
  void sendApiError(request, reply, apiError);
}
