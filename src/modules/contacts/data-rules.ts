import { type Expression, type RawBuilder, sql } from 'kysely';
import { z } from 'zod';
import type { DataValue } from '../../db/schema.js';
import { type ApiError, validationError } from '../../http/errors.js';

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

/**
 * Limits of contact data (docs/contacts.md "Data limits"). The zod schemas below hold one request's
 * `data` to them; {@link dataLimitBreach} holds the stored data to them after a merge, in the
 * upsert and PATCH statements. Every write path goes through both.
 */
export const DATA_LIMITS = {
  /** Keys of one contact's stored data, and of one request's `data`. */
  maxKeys: 200,
  /** Characters of a data key. */
  maxKeyLength: 100,
  /** Characters of a string value. */
  maxStringLength: 10_000,
  /** UTF-8 bytes of one contact's data as compact JSON (`{"k":"v",…}`), and of one request's `data`. */
  maxBytes: 64 * 1024,
} as const;

const primitive = z.union([z.string(), z.number(), z.boolean()]);
const PRIMITIVE_MESSAGE = 'Data values must be a string, number, boolean or null';

/** `{value, persistent}`: with persistent false, the value is used for this request only. */
const TransientValue = z.strictObject({ value: primitive.nullable(), persistent: z.boolean() });

/** A one-off `{value, persistent}` unwrapped; other values as they are. */
const plainValue = (v: unknown): unknown => (v !== null && typeof v === 'object' && 'value' in v ? v.value : v);

/** UTF-8 bytes of data as compact JSON, one-off values unwrapped (what is stored or rendered). */
export function dataBytes(data: Readonly<Record<string, unknown>>): number {
  const plain: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(data)) plain[k] = plainValue(v);
  return Buffer.byteLength(JSON.stringify(plain));
}

/** A broken limit of one request's data; `key` when it is about one key. */
export interface DataLimitIssue {
  key?: string;
  code: 'too_big' | 'too_small';
  message: string;
}

const tooManyKeys = (count: number): DataLimitIssue => ({ code: 'too_big', message: `At most ${DATA_LIMITS.maxKeys} data keys (got ${count})` });

/**
 * The limits of one request's data (values already of the allowed types), in the order a client
 * fixes them: key count, then each key and string value, then the total size. The zod schemas
 * below and the CSV import (whose cells skip zod: a 200-cell row checks ~30 times faster) both use it.
 */
export function dataLimitIssues(data: Readonly<Record<string, unknown>>): DataLimitIssue[] {
  // for…in and an upper bound on the size: this runs for every CSV row, allocating nothing.
  let count = 0;
  for (const _ in data) count++;
  if (count > DATA_LIMITS.maxKeys) return [tooManyKeys(count)];
  const issues: DataLimitIssue[] = [];
  let bound = 2; // {}
  for (const key in data) {
    const value = plainValue(data[key]);
    if (key.length === 0) issues.push({ key, code: 'too_small', message: 'Data keys must not be empty' });
    else if (key.length > DATA_LIMITS.maxKeyLength) issues.push({ key, code: 'too_big', message: `Data keys are at most ${DATA_LIMITS.maxKeyLength} characters` });
    else if (typeof value === 'string' && value.length > DATA_LIMITS.maxStringLength) {
      issues.push({ key, code: 'too_big', message: `String values are at most ${DATA_LIMITS.maxStringLength} characters` });
    }
    // A UTF-16 unit is at most 6 bytes of JSON (\uXXXX); a number at most 24 characters.
    bound += 6 * key.length + 4 + (typeof value === 'string' ? 6 * value.length + 2 : 24);
  }
  if (issues.length > 0 || bound <= DATA_LIMITS.maxBytes) return issues;
  const bytes = dataBytes(data);
  return bytes > DATA_LIMITS.maxBytes ? [{ code: 'too_big', message: `Data is at most ${DATA_LIMITS.maxBytes} bytes as JSON (got ${bytes})` }] : [];
}

const asZodIssue = (i: DataLimitIssue, input: unknown) => ({
  code: 'custom' as const,
  message: i.message,
  params: { code: i.code },
  path: i.key === undefined ? [] : [i.key],
  input,
});

/**
 * A `data` record held to the limits ({@link dataLimitIssues}). The key count is checked before
 * zod walks the record, so a body with 600,000 keys costs one `Object.keys`, not 600,000
 * validations.
 */
function limitedData<V extends z.ZodType>(value: V, description: string) {
  return z
    .preprocess((input, ctx) => {
      if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
      const count = Object.keys(input).length;
      if (count > DATA_LIMITS.maxKeys) ctx.issues.push(asZodIssue(tooManyKeys(count), input));
      return input;
    }, z.record(z.string(), value))
    .superRefine((data, ctx) => {
      for (const issue of dataLimitIssues(data)) ctx.addIssue(asZodIssue(issue, data));
    })
    .describe(
      `${description}. At most ${DATA_LIMITS.maxKeys} keys of 1 to ${DATA_LIMITS.maxKeyLength} characters, strings of at most ` +
        `${DATA_LIMITS.maxStringLength} characters, ${DATA_LIMITS.maxBytes} bytes as JSON; the contact's data after the merge is held to the same limits`,
    );
}

/** `data` of POST/PATCH /contacts: primitives or null. */
export const ContactDataInput = limitedData(
  z.union([primitive, z.null()], { error: PRIMITIVE_MESSAGE }),
  'Primitives are stored, null deletes the key, an empty string is ignored, reserved keys are dropped',
);

/** `data` of /v1/send and /v1/track: also `{value, persistent: false}` for one-off values. */
export const RequestDataInput = limitedData(
  z.union([primitive, z.null(), TransientValue], { error: `${PRIMITIVE_MESSAGE}, or {value, persistent}` }),
  'As for contacts, plus {value, persistent: false} for a value used by this request only',
);

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

/** The limit a write of contact data breaks, measured on the contact's data after the merge. */
export type DataLimitBreach = 'keys' | 'bytes';

export const DATA_LIMIT_MESSAGES: Readonly<Record<DataLimitBreach, string>> = {
  keys: `A contact holds at most ${DATA_LIMITS.maxKeys} data keys; this write would leave it with more (delete keys with null, or write fewer)`,
  bytes: `A contact's data is at most ${DATA_LIMITS.maxBytes} bytes as JSON; this write would leave it larger`,
};

/** 422 on field `data` naming the limit a merge would break. */
export const dataLimitError = (breach: DataLimitBreach): ApiError =>
  validationError([{ field: 'data', message: DATA_LIMIT_MESSAGES[breach], code: 'too_big' }]);

/**
 * Binary (jsonb) size under which data cannot break a limit, so the exact measures are skipped
 * (the common case costs one size lookup). A jsonb object takes at least 8 + 8n bytes for n keys
 * (1,600 holds at most 199), and its compact JSON text is at most ~25 times its binary size (a
 * number such as 1e308 prints 309 digits from ~8 bytes; a string escapes to at most 6 bytes per
 * byte), so at most 40 x 1,600 = 64,000 bytes.
 */
const SAFE_BINARY_BYTES = 1_600;

/** Compact JSON bytes of a jsonb object of `keys` keys: its text form has a space after each ':' and ',' (2n-1). */
const compactBytes = (obj: Expression<unknown>, keys: Expression<unknown>) =>
  sql`(octet_length(${obj}::text) - greatest(2 * ${keys} - 1, 0))`;

/**
 * SQL: the limit ({@link DataLimitBreach}) broken by a write that turns the stored data `before`
 * into `after` (jsonb objects, each evaluated up to 4 times: column references where it matters), or NULL. A
 * write is refused only when `after` is over a limit AND beyond `before` by that measure:
 * rewriting the same data is never refused, and data stored before these limits existed can
 * still be reduced. Bytes are measured as {@link dataBytes} does. The exact measures are taken
 * only above {@link SAFE_BINARY_BYTES}; one subquery, as each one costs planning time on every
 * statement (measured: ~0.1 ms per track batch).
 */
export function dataLimitBreach(before: Expression<unknown>, after: Expression<unknown>): RawBuilder<DataLimitBreach | null> {
  const [an, bn] = [sql.ref('a.n'), sql.ref('b.n')];
  return sql<DataLimitBreach | null>`(CASE WHEN pg_column_size(${after}) <= ${sql.lit(SAFE_BINARY_BYTES)} THEN NULL ELSE (
      SELECT CASE
        WHEN a.n > ${sql.lit(DATA_LIMITS.maxKeys)} AND a.n > b.n THEN 'keys'
        WHEN ${compactBytes(after, an)} > ${sql.lit(DATA_LIMITS.maxBytes)} AND ${compactBytes(after, an)} > ${compactBytes(before, bn)} THEN 'bytes'
      END
      FROM (SELECT count(*) AS n FROM jsonb_object_keys(${after})) a, (SELECT count(*) AS n FROM jsonb_object_keys(${before})) b
    ) END)`;
}

/** Emails are unique per project and compared case-insensitively: stored trimmed and lower-cased. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();
