import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type FieldError, validationError } from './errors.js';

/**
 * Characters PostgreSQL cannot store: U+0000 (refused in text and jsonb) and UTF-16
 * surrogates without their pair (jsonb refuses the `\ud800` escape JSON.stringify writes
 * for them; text columns would silently get U+FFFD instead).
 */
const ANY_SURROGATE = /[\uD800-\uDFFF]/;
/** With the `u` flag a paired surrogate is one code point: only an unpaired one matches. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const LONE_SURROGATES = /[\uD800-\uDFFF]/gu;

/** At most this many refused strings are listed; the rest would only repeat the message. */
const MAX_REPORTED = 20;

/** The first refused character of `text`, or undefined when PostgreSQL takes it as is. */
export function refusedChar(text: string): string | undefined {
  if (text.includes('\u0000')) return '\u0000';
  // Most text has no surrogate at all: the plain scan answers that fastest.
  const first = text.search(ANY_SURROGATE);
  return first === -1 ? undefined : LONE_SURROGATE.exec(text.slice(first))?.[0];
}

const describe = (ch: string) =>
  `U+${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}${ch === '\u0000' ? ' (NUL)' : ' (unpaired surrogate)'}`;

/** A key shown in a field path with its refused characters escaped, so the path stays printable. */
const printable = (key: string) =>
  key.replaceAll('\u0000', '\\u0000').replace(LONE_SURROGATES, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/**
 * Every string and object key of `input` that PostgreSQL would refuse, as field errors.
 * Iterative (an explicit stack), so a deeply nested body cannot overflow the call stack;
 * the work is linear in the size of the input, which the body limit bounds.
 */
export function refusedTextErrors(input: unknown, root: string): FieldError[] {
  const errors: FieldError[] = [];
  const stack: { value: unknown; path: string }[] = [{ value: input, path: root }];
  for (let frame = stack.pop(); frame && errors.length < MAX_REPORTED; frame = stack.pop()) {
    const { value, path } = frame;
    if (typeof value === 'string') {
      const ch = refusedChar(value);
      if (ch) errors.push({ field: path || '(body)', code: 'invalid_string', message: `Text contains ${describe(ch)}, which cannot be stored` });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) stack.push({ value: value[i], path: join(path, String(i)) });
    } else if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      for (const [key, child] of Object.entries(value).reverse()) {
        const ch = refusedChar(key);
        if (ch) {
          errors.push({ field: join(path, printable(key)), code: 'invalid_string', message: `Key contains ${describe(ch)}, which cannot be stored` });
        } else {
          stack.push({ value: child, path: join(path, key) });
        }
      }
    }
  }
  return errors;
}

/**
 * Whether any string or object key of `input` is refused: the walk of {@link refusedTextErrors}
 * without the field paths, so an acceptable body (nearly all of them) allocates no path string.
 */
export function hasRefusedText(input: unknown): boolean {
  const stack: unknown[] = [input];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (refusedChar(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value) stack.push(item);
    } else if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value)) {
      for (const key in value) {
        if (!Object.hasOwn(value, key)) continue;
        if (refusedChar(key)) return true;
        stack.push((value as Record<string, unknown>)[key]);
      }
    }
  }
  return false;
}

function requestTextErrors(request: FastifyRequest): FieldError[] {
  if (!hasRefusedText(request.params) && !hasRefusedText(request.query) && !hasRefusedText(request.body)) return [];
  return [
    ...refusedTextErrors(request.params, ''),
    ...refusedTextErrors(request.query, ''),
    ...refusedTextErrors(request.body, ''),
  ];
}

/**
 * One rule for every route, present and future: path parameters, query and body are
 * checked for text PostgreSQL refuses before schema validation, so such input is a 422
 * naming the field, never a 500 from the database halfway through a write.
 */
export const textRulesPlugin = fp(
  async (app: FastifyInstance) => {
    // A callback hook: no promise per request.
    app.addHook('preValidation', (request, _reply, done) => {
      const errors = requestTextErrors(request);
      done(errors.length > 0 ? validationError(errors.slice(0, MAX_REPORTED)) : undefined);
    });
  },
  { name: 'text-rules' },
);
