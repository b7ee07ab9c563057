import { acceptContactData } from '../contacts/index.js';
import { isReservedEventName } from './event-names.js';
import { TrackBody } from './events.schema.js';

/**
 * The fast path of POST /v1/track's body validation: a body that is plainly valid is accepted
 * here, without zod (whose parse of a typical body, with its `data` values tried against each
 * option of their union, and the unknown-field walk took ~10 µs: ~6 % of the API's CPU per
 * track at full rate, docs/performance.md). Anything else — any doubt — is left to the schema,
 * which judges it and words the errors as before. It must accept only bodies TrackBody accepts
 * (with no unknown field), with the value TrackBody returns: test/modules/events/track-accept.test.ts
 * holds it to that over a corpus of valid and invalid bodies.
 */

const FIELDS: ReadonlySet<string> = new Set(['email', 'event', 'subscribed', 'data']);

/**
 * The email format of the schema itself (`z.email()`'s pattern), so the two cannot disagree.
 * Read at the first call: this module is imported while events.schema.ts may still be evaluating
 * (the contacts facade imports the events one back).
 */
let emailPattern: RegExp | undefined;
function emailPatternOfSchema(): RegExp {
  const pattern = (TrackBody.shape.email._zod.def as { pattern?: unknown }).pattern;
  if (!(pattern instanceof RegExp)) throw new Error('TrackBody.email has no pattern: update track.accept.ts');
  return pattern;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;

const hasNul = (text: string) => text.includes('\u0000');

function acceptEvent(name: unknown): name is string {
  return typeof name === 'string' && name.length >= 1 && name.length <= 255 && name.trim() !== '' && !hasNul(name) && !isReservedEventName(name);
}

/** The body as TrackBody parses it when it is plainly valid; undefined to let the schema judge. */
export function acceptTrackBody(body: unknown): TrackBody | undefined {
  if (!isPlainObject(body)) return undefined;
  for (const key in body) if (!FIELDS.has(key)) return undefined;
  const { email, event, subscribed, data } = body;
  if (typeof email !== 'string' || !(emailPattern ??= emailPatternOfSchema()).test(email) || !acceptEvent(event)) return undefined;
  if (subscribed !== undefined && typeof subscribed !== 'boolean') return undefined;
  if (data !== undefined && !acceptContactData(data)) return undefined;
  return {
    email,
    event,
    ...(subscribed !== undefined && { subscribed }),
    ...(data !== undefined && { data: data as TrackBody['data'] }),
  };
}
