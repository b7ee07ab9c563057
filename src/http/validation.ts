import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify';
import { $ZodType, safeParse } from 'zod/v4/core';
import type { ZodError } from 'zod';
import { ApiError, ErrorCode, type FieldError, VALIDATION_MESSAGE } from './errors.js';
import { unknownFields } from './unknown-fields.js';

/** Zod v4 issue codes renamed to the words the spec uses (DESIGN §10). */
const CODE_WORDS: Record<string, string> = {
  invalid_format: 'invalid_string',
  invalid_value: 'invalid_enum_value',
  unrecognized_keys: 'unrecognized_keys',
};

/**
 * The field name of an error about a whole request part. Parenthesised so it can never be
 * taken for a field of that name (`/v1/send` has a `body` field).
 */
export const WHOLE = { body: '(body)', querystring: '(query)', params: '(params)', headers: '(headers)' } as const;
const wholeName = (context: string | undefined) => WHOLE[(context ?? 'body') as keyof typeof WHOLE] ?? `(${context})`;

/** Sent when a JSON route gets no body at all (a curl without `-d`, or without the header). */
export const MISSING_BODY = 'Request body is missing: send a JSON object with `Content-Type: application/json`';

function fieldCode(code: string, params: Record<string, unknown> | undefined): string {
  if (code === 'custom' && params && typeof params.params === 'object' && params.params !== null) {
    const custom = (params.params as Record<string, unknown>).code;
    if (typeof custom === 'string') return custom;
  }
  return CODE_WORDS[code] ?? code;
}

function fieldName(path: string, context: string | undefined): string {
  const dotted = path.replace(/^\//, '').split('/').filter(Boolean).join('.');
  return dotted || wholeName(context);
}

function valueAt(input: unknown, segments: readonly PropertyKey[]): unknown {
  let current = input;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current;
}

interface Issue {
  code: string;
  path: readonly PropertyKey[];
  message: string;
  params?: unknown;
}

/**
 * One zod issue as an `errors[]` entry. With the validated input (`part`), a missing field
 * reads "Required" and a missing body says how to send one.
 */
function issueToFieldError(issue: Issue, context: string | undefined, part?: { input: unknown }): FieldError {
  const field = issue.path.map(String).join('.') || wholeName(context);
  // Fastify passes null when the request had no body.
  if (part && issue.path.length === 0 && (part.input === null || part.input === undefined) && context === 'body') {
    return { field, code: 'invalid_type', message: MISSING_BODY };
  }
  const missing = part !== undefined && issue.path.length > 0 && valueAt(part.input, issue.path) === undefined;
  return {
    field,
    message: missing ? 'Required' : issue.message,
    code: missing ? 'invalid_type' : fieldCode(issue.code, issue.code === 'custom' ? { params: issue.params } : undefined),
  };
}

/**
 * The validator of every route part declared with a zod schema. Bodies are also checked for
 * fields no object schema declares (`unrecognized_keys`, with "did you mean" when a
 * declared field is close), so a typo is named instead of read as a missing field.
 */
export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (!(schema instanceof $ZodType)) throw new Error(`Route schemas are zod schemas (${httpPart ?? 'part'})`);
  return (data) => {
    const result = safeParse(schema, data);
    const unknown = httpPart === 'body' ? unknownFields(schema, data) : { errors: [] };
    if (result.success && unknown.errors.length === 0) return { value: result.data };
    // Zod's own unrecognized_keys (strict objects) name the object, not the key: ours replace them.
    const issues = result.success ? [] : result.error.issues.filter((i) => !(httpPart === 'body' && i.code === 'unrecognized_keys'));
    const errors = [...unknown.errors, ...issues.map((i) => issueToFieldError(i, httpPart, { input: data }))];
    return { error: new ApiError(422, ErrorCode.VALIDATION_ERROR, VALIDATION_MESSAGE, { errors, suggestion: unknown.suggestion }) };
  };
};

/**
 * A route's validator compiler with a fast path for its body: `accept` returns the body's value
 * when it is plainly valid, or undefined to let the route's schema judge it (and word the errors).
 * `accept` must accept only bodies the schema accepts, with the value the schema returns.
 */
export function withBodyFastPath(accept: (body: unknown) => unknown): FastifySchemaCompiler<unknown> {
  return (route) => {
    const full = validatorCompiler(route);
    if (route.httpPart !== 'body') return full;
    return (data) => {
      const value = accept(data);
      return value === undefined ? full(data) : { value };
    };
  };
}

/**
 * Maps fastify/zod validation errors onto the envelope's `errors[]` (routes validated by
 * another compiler than ours). With the validated `input`, a missing field reads "Required".
 */
export function toFieldErrors(
  validation: readonly FastifySchemaValidationError[],
  context?: string,
  input?: unknown,
): FieldError[] {
  return validation.map((v) => {
    const segments = v.instancePath.split('/').filter(Boolean);
    const missing = input !== undefined && segments.length > 0 && valueAt(input, segments) === undefined;
    return {
      field: fieldName(v.instancePath, context),
      message: missing ? 'Required' : (v.message ?? 'Invalid value'),
      code: missing ? 'invalid_type' : fieldCode(v.keyword, v.params),
    };
  });
}

/** Same mapping for a ZodError raised by a manual `schema.parse` in a service. */
export function zodToFieldErrors(error: ZodError): FieldError[] {
  return error.issues.map((issue) => issueToFieldError(issue, 'body'));
}
