import { dataLimitIssues } from './data-rules.js';

/**
 * The `data` part of the /v1/track and /v1/send body fast paths (events/track.accept.ts,
 * emails/send.accept.ts): true only for a record the schemas' `data` accepts as is. Anything
 * else is left to the schema, which words the errors (the fast paths' corpus tests hold both to it).
 */

/** `data` keys at most: more are judged by the schema (which counts them before walking). */
const MAX_KEYS = 200;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
const isPrimitive = (value: unknown): boolean =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
const hasNul = (text: string) => text.includes('\u0000');

/** A data value: a primitive, null, or exactly `{value: primitive | null, persistent: boolean}`; no NUL in strings. */
function acceptValue(raw: unknown): boolean {
  if (raw === null) return true;
  if (isPrimitive(raw)) return typeof raw !== 'string' || !hasNul(raw);
  if (!isPlainObject(raw)) return false;
  let keys = 0;
  for (const key in raw) {
    if (key !== 'value' && key !== 'persistent') return false;
    keys++;
  }
  if (keys !== 2 || typeof raw.persistent !== 'boolean') return false;
  const value = raw.value;
  return value === null || (isPrimitive(value) && (typeof value !== 'string' || !hasNul(value)));
}

/** A plain record of at most 200 keys without NUL, each value accepted, within the data limits. */
export function acceptContactData(data: unknown): boolean {
  if (!isPlainObject(data)) return false;
  let keys = 0;
  for (const key in data) {
    if (++keys > MAX_KEYS || hasNul(key) || !acceptValue(data[key])) return false;
  }
  return dataLimitIssues(data).length === 0;
}
