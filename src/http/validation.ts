import type { FastifySchemaValidationError } from 'fastify';
import type { ZodError } from 'zod';
import type { FieldError } from './errors.js';

/** Zod v4 issue codes renamed to the words the spec uses (DESIGN §10). */
const CODE_WORDS: Record<string, string> = {
  invalid_format: 'invalid_string',
  invalid_value: 'invalid_enum_value',
  unrecognized_keys: 'unrecognized_keys',
};

function fieldCode(code: string, params: Record<string, unknown> | undefined): string {
  if (code === 'custom' && params && typeof params.params === 'object' && params.params !== null) {
    const custom = (params.params as Record<string, unknown>).code;
    if (typeof custom === 'string') return custom;
  }
  return CODE_WORDS[code] ?? code;
}

function fieldName(path: string, context: string | undefined): string {
  const dotted = path.replace(/^\//, '').split('/').filter(Boolean).join('.');
  if (dotted) return dotted;
  return context === 'body' || !context ? 'body' : context;
}

function valueAt(input: unknown, segments: string[]): unknown {
  let current = input;
  for (const segment of segments) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/**
 * Maps fastify/zod validation errors onto the envelope's `errors[]`. With the validated
 * `input`, a missing field reads as `invalid_type` "Required" whatever the schema type.
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
  return error.issues.map((issue) => ({
    field: issue.path.map(String).join('.') || 'body',
    message: issue.message,
    code: fieldCode(issue.code, issue.code === 'custom' ? { params: issue.params } : undefined),
  }));
}
