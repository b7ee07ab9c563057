import type { $ZodType, $ZodTypes } from 'zod/v4/core';
import type { FieldError } from './errors.js';

/** Reported unknown fields per request; more would only repeat the point. */
const MAX_REPORTED = 20;
/** Values visited per body: bounds the walk on any accepted body (a 1 MB body has fewer nodes). */
const MAX_VISITS = 200_000;
/** Wrappers unwrapped per value (optional of default of pipe …); real schemas use a handful. */
const MAX_UNWRAP = 32;

/** Names callers reach for that are not a typo of ours: `html` on /v1/send means `body`. */
const ALIASES: Record<string, string> = { html: 'body', text: 'body', replyTo: 'reply', reply_to: 'reply' };

// Every zod schema is one of $ZodTypes; the cast lets `def.type` narrow the definition.
const defOf = (schema: $ZodType) => (schema as $ZodTypes)._zod.def;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !Buffer.isBuffer(v);

/** The schema that judges the value's shape: through optional, default, pipe, lazy and the like. */
function unwrap(schema: $ZodType): $ZodType {
  let current = schema;
  for (let i = 0; i < MAX_UNWRAP; i++) {
    const def = defOf(current);
    switch (def.type) {
      case 'optional':
      case 'nullable':
      case 'default':
      case 'prefault':
      case 'catch':
      case 'readonly':
      case 'nonoptional':
        current = def.innerType;
        break;
      case 'pipe':
        // z.preprocess(fn, schema) is pipe(transform, schema): the schema after it knows the fields.
        current = defOf(def.in).type === 'transform' ? def.out : def.in;
        break;
      case 'lazy':
        current = def.getter();
        break;
      default:
        return current;
    }
  }
  return current;
}

/** Optimal string alignment distance (a swap of two neighbours counts 1: `emial` → `email`). */
export function editDistance(a: string, b: string): number {
  const cols = b.length + 1;
  const d = new Array<number>((a.length + 1) * cols).fill(0);
  const at = (i: number, j: number) => d[i * cols + j] ?? 0;
  for (let i = 0; i <= a.length; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      d[i * cols + j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The known field `key` most likely stands for, when one is close enough to be a typo. */
export function closestField(key: string, known: readonly string[]): string | undefined {
  const alias = ALIASES[key];
  if (alias && known.includes(alias)) return alias;
  if (key.length > 100) return undefined;
  const lower = key.toLowerCase();
  const allowed = key.length <= 4 ? 1 : key.length <= 8 ? 2 : 3;
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.toLowerCase() === lower ? 0 : editDistance(lower, name.toLowerCase());
    if (distance <= allowed && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** How many top-level keys of `value` the option does not declare (0 for open shapes). */
function unknownCount(option: $ZodType, value: Record<string, unknown>): number {
  const def = defOf(unwrap(option));
  if (def.type !== 'object') return def.type === 'record' || def.type === 'unknown' || def.type === 'any' ? 0 : Infinity;
  return Object.keys(value).filter((k) => !Object.hasOwn(def.shape, k)).length;
}

/** The union option an object value was meant for: the one that declares most of its keys. */
function likelyOption(options: readonly $ZodType[], value: unknown): $ZodType | undefined {
  if (!isPlainObject(value) && !Array.isArray(value)) return undefined;
  let best: { option: $ZodType; unknown: number } | undefined;
  for (const option of options) {
    const type = defOf(unwrap(option)).type;
    if (Array.isArray(value)) {
      if (type === 'array' || type === 'tuple') return option;
      continue;
    }
    const unknown = unknownCount(option, value);
    if (unknown !== Infinity && (!best || unknown < best.unknown)) best = { option, unknown };
  }
  return best?.option;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/** Keys are shown at most this long: a body may hold a megabyte-long key. */
const MAX_SHOWN_KEY = 100;

function unknownFieldError(path: string, fullKey: string, known: string[]): FieldError & { guess?: string } {
  const guess = closestField(fullKey, known);
  const key = fullKey.length > MAX_SHOWN_KEY ? `${fullKey.slice(0, MAX_SHOWN_KEY)}…` : fullKey;
  const hint = guess ? `did you mean \`${guess}\`?` : known.length > 0 ? `accepted here: ${known.slice(0, 15).join(', ')}` : 'no fields are accepted here';
  return { field: join(path, key), code: 'unrecognized_keys', message: `Unknown field \`${key}\`: ${hint}`, guess };
}

export interface UnknownFields {
  errors: FieldError[];
  /** "Did you mean …" for the first typo, for the envelope's `suggestion`. */
  suggestion?: string;
}

/**
 * The fields of `input` that no object schema of `schema` declares, each with a "did you
 * mean" when a declared field is close. Objects (`z.object`, strict or not) are closed;
 * records, `z.unknown()` and loose objects are open, so free-form maps (`data`, `headers`,
 * conditions) accept any key. Iterative and bounded, whatever the body's depth.
 */
export function unknownFields(schema: $ZodType, input: unknown): UnknownFields {
  const errors: (FieldError & { guess?: string })[] = [];
  const stack: { schema: $ZodType; value: unknown; path: string }[] = [{ schema, value: input, path: '' }];
  let visits = 0;
  for (let frame = stack.pop(); frame && visits < MAX_VISITS && errors.length < MAX_REPORTED; frame = stack.pop(), visits++) {
    const { value, path } = frame;
    const def = defOf(unwrap(frame.schema));
    if (def.type === 'object' && isPlainObject(value)) {
      const known = Object.keys(def.shape);
      const open = def.catchall !== undefined && defOf(def.catchall).type !== 'never';
      for (const key of Object.keys(value)) {
        const field = Object.hasOwn(def.shape, key) ? def.shape[key] : undefined;
        if (field) stack.push({ schema: field, value: value[key], path: join(path, key) });
        else if (!open && errors.length < MAX_REPORTED) errors.push(unknownFieldError(path, key, known));
      }
    } else if (def.type === 'array' && Array.isArray(value)) {
      value.forEach((item, i) => stack.push({ schema: def.element, value: item, path: join(path, String(i)) }));
    } else if (def.type === 'tuple' && Array.isArray(value)) {
      value.forEach((item, i) => {
        const itemSchema = def.items[i] ?? def.rest;
        if (itemSchema) stack.push({ schema: itemSchema, value: item, path: join(path, String(i)) });
      });
    } else if (def.type === 'record' && isPlainObject(value)) {
      for (const [key, child] of Object.entries(value)) stack.push({ schema: def.valueType, value: child, path: join(path, key) });
    } else if (def.type === 'union') {
      const option = likelyOption(def.options, value);
      if (option) stack.push({ schema: option, value, path });
    } else if (def.type === 'intersection') {
      // Each side alone would call the other side's fields unknown: an intersection stays open.
      continue;
    }
  }
  const typo = errors.find((e) => e.guess);
  return {
    errors: errors.slice(0, MAX_REPORTED).map(({ guess: _guess, ...error }) => error),
    ...(typo && { suggestion: `Did you mean \`${typo.guess}\` instead of \`${typo.field}\`?` }),
  };
}
