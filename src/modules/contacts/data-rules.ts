import { z } from 'zod';
import type { DataValue } from '../../db/schema.js';

/**
 * The contact data rules (SPEC Contact), shared by track, send and the contact routes:
 * primitives are stored, `null` deletes the key, an empty string is ignored,
 * `{value, persistent: false}` is for this request only (send and track), and reserved
 * keys are silently dropped.
 */
export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set([
  'id',
  'service_id',
  'service_email',
  'email',
  'unsubscribeUrl',
  'subscribeUrl',
  'manageUrl',
]);

const MAX_KEY_LENGTH = 255;
const MAX_STRING_LENGTH = 65_535;

const primitive = z.union([z.string().max(MAX_STRING_LENGTH), z.number(), z.boolean()]);
const PRIMITIVE_MESSAGE = 'Data values must be a string, number, boolean or null';

/** `{value, persistent}`: with persistent false, the value is used for this request only. */
const TransientValue = z.strictObject({ value: primitive.nullable(), persistent: z.boolean() });

const key = z.string().min(1, 'Data keys must not be empty').max(MAX_KEY_LENGTH);

/** `data` of POST/PATCH /contacts: primitives or null. */
export const ContactDataInput = z.record(key, z.union([primitive, z.null()], { error: PRIMITIVE_MESSAGE })).describe(
  'Primitives are stored, null deletes the key, an empty string is ignored, reserved keys are dropped',
);

/** `data` of /v1/send and /v1/track: also `{value, persistent: false}` for one-off values. */
export const RequestDataInput = z
  .record(key, z.union([primitive, z.null(), TransientValue], { error: `${PRIMITIVE_MESSAGE}, or {value, persistent}` }))
  .describe('As for contacts, plus {value, persistent: false} for a value used by this request only');

export type DataInput = Record<string, DataValue | null | { value: DataValue | null; persistent: boolean }>;

/** A data write resolved by the rules. */
export interface ResolvedData {
  /** Applied to the stored data: a value sets the key, null deletes it. */
  patch: Record<string, DataValue | null>;
  /** Values of this request (stored and one-off), for rendering and the event record. */
  values: Record<string, DataValue>;
}

export function resolveData(input: DataInput | undefined): ResolvedData {
  const patch: Record<string, DataValue | null> = {};
  const values: Record<string, DataValue> = {};
  if (!input) return { patch, values };
  for (const [k, raw] of Object.entries(input)) {
    if (RESERVED_DATA_KEYS.has(k)) continue;
    const persistent = raw === null || typeof raw !== 'object' || raw.persistent;
    const value = raw !== null && typeof raw === 'object' ? raw.value : raw;
    if (value === '') continue;
    if (!persistent) {
      if (value !== null) values[k] = value;
      continue;
    }
    patch[k] = value;
    if (value !== null) values[k] = value;
  }
  return { patch, values };
}

/** The stored data after a patch: what the database computes with `jsonb_strip_nulls(data || patch)`. */
export function applyPatch(data: Record<string, DataValue>, patch: Record<string, DataValue | null>): Record<string, DataValue> {
  const out: Record<string, DataValue> = { ...data };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** Emails are unique per project and compared case-insensitively: stored trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();
