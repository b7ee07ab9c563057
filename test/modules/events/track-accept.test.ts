import { describe, expect, it } from 'vitest';
import { TrackBody } from '../../../src/modules/events/events.schema.js';
import { acceptTrackBody } from '../../../src/modules/events/track.accept.js';
import { ABSENT, DATA_VALUES as DATA, expectAcceptsOnlyWhatTheSchemaAccepts, routeBodyValidator, seededPick, SUBSCRIBED_VALUES as SUBSCRIBED } from '../../helpers/fast-path.js';

/**
 * POST /v1/track's fast path (track.accept.ts) against the route's full validation (TrackBody and
 * the unknown-field check, as the route compiles them): over a corpus of valid and invalid bodies,
 * whatever the fast path accepts the schema accepts with the same value, and every body the schema
 * accepts is taken by the fast path (the common case never pays for zod).
 */
const full = routeBodyValidator(TrackBody, '/v1/track');

const EMAILS: unknown[] = [
  'ada@example.com',
  'Ada.Lovelace+tag@Example.CO.uk',
  "o'brien@example.com",
  ' ada@example.com',
  'ada@example',
  'ada@@example.com',
  'ada.@example.com',
  'ada@exa_mple.com',
  'ädä@example.com',
  `${'a'.repeat(300)}@example.com`,
  '',
  5,
  null,
  ABSENT,
];
const EVENTS: unknown[] = [
  'signed_up',
  'page-view',
  'émoji 🎉',
  'x'.repeat(255),
  'x'.repeat(256),
  '',
  '   ',
  'email.sent',
  ' Email.Opened',
  'contact.subscribed',
  'contact.updated',
  'segment.vip.entry',
  'segment..exit',
  'a\u0000b',
  5,
  null,
  ABSENT,
];
const EXTRA: Record<string, unknown>[] = [{}, { emial: 'x' }, { Event: 'x' }, { data2: {} }];

function body(email: unknown, event: unknown, subscribed: unknown, data: unknown, extra: Record<string, unknown>): unknown {
  const b: Record<string, unknown> = { ...extra };
  if (email !== ABSENT) b.email = email;
  if (event !== ABSENT) b.event = event;
  if (subscribed !== ABSENT) b.subscribed = subscribed;
  if (data !== ABSENT) b.data = data;
  // As the route receives it: parsed JSON.
  return JSON.parse(JSON.stringify(b));
}

/** Every field varied alone from a valid body, and a seeded sample of combinations. */
function corpus(): unknown[] {
  const bodies: unknown[] = [null, [], 'text', 5, true];
  for (const e of EMAILS) bodies.push(body(e, 'signed_up', ABSENT, ABSENT, {}));
  for (const e of EVENTS) bodies.push(body('ada@example.com', e, ABSENT, ABSENT, {}));
  for (const s of SUBSCRIBED) bodies.push(body('ada@example.com', 'signed_up', s, ABSENT, {}));
  for (const d of DATA) bodies.push(body('ada@example.com', 'signed_up', ABSENT, d, {}));
  for (const x of EXTRA) bodies.push(body('ada@example.com', 'signed_up', ABSENT, ABSENT, x));
  const pick = seededPick(42);
  for (let i = 0; i < 3000; i++) bodies.push(body(pick(EMAILS), pick(EVENTS), pick(SUBSCRIBED), pick(DATA), pick(EXTRA)));
  // Combinations of valid values only (the pools start with them).
  for (let i = 0; i < 500; i++) bodies.push(body(pick(EMAILS.slice(0, 3)), pick(EVENTS.slice(0, 4)), pick(SUBSCRIBED.slice(0, 3)), pick(DATA.slice(0, 7)), {}));
  return bodies;
}

describe('acceptTrackBody (the fast path of /v1/track validation)', () => {
  const bodies = corpus();

  it('accepts only what TrackBody accepts, with the value TrackBody returns', () => {
    expectAcceptsOnlyWhatTheSchemaAccepts(bodies, acceptTrackBody, full, 500);
  });

  it('takes every body TrackBody accepts in the corpus (valid calls never pay for zod)', () => {
    const missed = bodies.filter((b) => full(b).error === undefined && acceptTrackBody(b) === undefined);
    expect(missed.map((b) => JSON.stringify(b).slice(0, 200))).toEqual([]);
  });

  it('takes the calls bench/track.mjs sends', () => {
    const call = { email: 'user7@example.com', event: 'page-view', data: { plan: 'pro', visits: 7, source: null, order: { value: 'o-7', persistent: false } } };
    expect(acceptTrackBody(JSON.parse(JSON.stringify(call)))).toEqual(call);
  });
});
