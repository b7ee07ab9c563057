import { z } from 'zod';
import { ConditionTreeSchema } from '../conditions/index.js';
import { FilterSchema } from '../conditions/tree.js';

/** A JSON Schema (or any OpenAPI object) as the document holds it. */
export type JsonObject = Record<string, unknown>;

export const ERROR_ENVELOPE = 'ErrorEnvelope';
export const LEGACY_ERROR = 'LegacyError';
export const CONDITION_TREE = 'ConditionTree';
export const CONDITION_FILTER = 'ConditionFilter';

export const componentRef = (id: string) => `#/components/schemas/${id}`;

const FieldErrorSchema = z.object({
  field: z.string().describe('The offending field (dotted path), or `(body)`, `(query)`, `(params)` for a whole part'),
  message: z.string(),
  code: z.string().describe('e.g. invalid_type, too_big, unrecognized_keys, invalid_string'),
  received: z.unknown().optional(),
});

/**
 * The one error envelope (errors.ts `ErrorEnvelope`, DESIGN §10) as a schema. Kept beside the
 * interface's shape by test/http/openapi.test.ts, which parses real error answers with it.
 */
export const ErrorEnvelopeSchema = z.strictObject({
  success: z.literal(false),
  message: z.string().describe('`error.message` plus the first field errors: what Plunk-style clients show'),
  error: z.strictObject({
    code: z.string().describe('Machine-readable: VALIDATION_ERROR, NOT_FOUND, INVALID_API_KEY, …'),
    message: z.string(),
    statusCode: z.number().int(),
    requestId: z.string().describe('Also the X-Request-Id header and in every log line of the request'),
    errors: z.array(FieldErrorSchema).optional().describe('Field errors of a 422'),
    details: z.record(z.string(), z.unknown()).optional(),
    suggestion: z.string().optional(),
  }),
  timestamp: z.string(),
});

/** The flat 400 body a few routes keep for compatibility (SPEC Errors: `LegacyBadRequest`). */
export const LegacyErrorSchema = z.strictObject({ error: z.string() });

const ENVELOPE_EXAMPLE = {
  success: false,
  message: 'Request validation failed: to: Required',
  error: {
    code: 'VALIDATION_ERROR',
    message: 'Request validation failed',
    statusCode: 422,
    requestId: '5f0c6f1e-8a8e-4d55-9d3c-2b1e0f6f9a11',
    errors: [{ field: 'to', message: 'Required', code: 'invalid_type' }],
  },
  timestamp: '2026-01-01T12:00:00.000Z',
};

const CONDITION_EXAMPLE = {
  logic: 'AND',
  groups: [
    {
      filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }],
      conditions: { logic: 'OR', groups: [{ filters: [{ field: 'event.signed_up', operator: 'triggeredWithin', value: 7, unit: 'days' }] }] },
    },
  ],
};

const IDENTITY_KEYWORDS = new Set(['$id', '$schema', 'id']);

/** Drops the identity keywords zod stamps on a generated component's root. */
function component(schema: unknown): JsonObject {
  return Object.fromEntries(Object.entries(schema as JsonObject).filter(([k]) => !IDENTITY_KEYWORDS.has(k)));
}

/**
 * The schemas the document adds to those of the routes: the error envelope and the condition
 * tree. The tree is generated from the same zod schema the conditions module uses, as a
 * recursive component (`groups[].conditions` refers back to it). Routes keep `z.unknown()` for
 * these fields in validation (the depth check must run before anything recursive:
 * conditions/bounds.ts); only the document is typed.
 */
export function extraComponents(): Record<string, JsonObject> {
  const registry = z.registry<{ id: string }>();
  registry.add(ConditionTreeSchema, { id: CONDITION_TREE });
  registry.add(FilterSchema, { id: CONDITION_FILTER });
  registry.add(ErrorEnvelopeSchema, { id: ERROR_ENVELOPE });
  registry.add(LegacyErrorSchema, { id: LEGACY_ERROR });
  const { schemas } = z.toJSONSchema(registry, { target: 'draft-2020-12', io: 'input', uri: componentRef });
  const out = Object.fromEntries(Object.entries(schemas).map(([id, s]) => [id, component(s)]));
  const filter = out[CONDITION_FILTER] as { properties: Record<string, JsonObject> };
  filter.properties.value = {
    description: 'Depends on the operator: a string, number or boolean to compare; a number for windowed operators; absent for exists/triggered/memberOfSegment',
    type: ['string', 'number', 'boolean'],
  };
  return {
    ...out,
    [CONDITION_TREE]: {
      ...out[CONDITION_TREE],
      description: 'Condition tree (docs/conditions.md): groups combined by `logic`, each an AND of its filters and optional nested tree. Depth, group and filter limits apply.',
      examples: [CONDITION_EXAMPLE],
    },
    [ERROR_ENVELOPE]: { ...out[ERROR_ENVELOPE], description: 'Every error answer (DESIGN §10)', examples: [ENVELOPE_EXAMPLE] },
  };
}
