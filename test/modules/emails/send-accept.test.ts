import { describe, expect, it } from 'vitest';
import { acceptSendBody } from '../../../src/modules/emails/send.accept.js';
import { SendBody } from '../../../src/modules/emails/send.schema.js';
import { ABSENT, DATA_VALUES as DATA, expectAcceptsOnlyWhatTheSchemaAccepts, routeBodyValidator, seededPick, SUBSCRIBED_VALUES as SUBSCRIBED } from '../../helpers/fast-path.js';

/**
 * POST /v1/send's fast path (send.accept.ts) against the route's full validation (SendBody and the
 * unknown-field check, as the route compiles them): over a corpus of valid and invalid bodies,
 * whatever the fast path accepts the schema accepts with the same value, and every body of the
 * fields it handles that the schema accepts is taken by the fast path (the common case never pays
 * for zod).
 */
const full = routeBodyValidator(SendBody, '/v1/send');
const nested = (depth: number) => '<div>'.repeat(depth) + 'x' + '</div>'.repeat(depth);

const MAILBOXES: unknown[] = [
  'ada@example.com',
  'Ada Lovelace <ada@example.com>',
  '"Lovelace, Ada" <Ada.Lovelace+tag@Example.CO.uk>',
  "o'brien@example.com",
  ' ada@example.com ',
  'Ada <ada@example.com',
  'Ada <ada@example>',
  'A"da <ada@example.com>',
  '<ada@example.com>',
  'ada@example',
  'ada@@example.com',
  'ada.@example.com',
  'ädä@example.com',
  `${'a'.repeat(250)}@example.com`,
  `${'N'.repeat(500)} <ada@example.com>`,
  '',
  5,
  null,
  { email: 'ada@example.com' },
  { email: 'ada@example.com', name: 'Ada' },
  { email: 'nope' },
];
const TO: unknown[] = [
  ...MAILBOXES,
  ['ada@example.com'],
  ['ada@example.com', 'Bob <bob@example.com>', 'ADA@example.com'],
  Array.from({ length: 50 }, (_, i) => `u${i}@example.com`),
  Array.from({ length: 51 }, (_, i) => `u${i}@example.com`),
  [],
  ['ada@example.com', 'nope'],
  ['ada@example.com', { email: 'bob@example.com' }],
  [null],
  ABSENT,
];
const FROM: unknown[] = [...MAILBOXES, ABSENT];
const SUBJECTS: unknown[] = ['Order {{order}} confirmed', 'x', 'é🎉'.repeat(100), 'x'.repeat(998), 'x'.repeat(999), '', 'a\nb', 'a\rb', 'a\u0000b', 5, null, ABSENT];
const BODIES: unknown[] = [
  '<p>Hello {{name ?? there}}</p>',
  'plain text',
  nested(10),
  nested(500),
  nested(2000),
  '<div>'.repeat(3000),
  '',
  'a\u0000b',
  5,
  null,
  ABSENT,
];
const REPLY: unknown[] = [ABSENT, 'help@example.com', 'Help <help@example.com>', `${'a'.repeat(250)}@example.com`, 'nope', '', 5, null];
const NAME: unknown[] = [ABSENT, 'Shop', '', 'x'.repeat(256), 'x'.repeat(257), 'a\nb', 'a\u0000b', 5, null];
const TYPE: unknown[] = [ABSENT, 'html', 'markdown', null];
/** Fields the fast path leaves to the schema, and unknown ones. */
const EXTRA: Record<string, unknown>[] = [
  {},
  { template: '0b8f5f0e-2c1d-4c43-9a57-3c2a4f1d7e10' },
  { headers: { 'X-Campaign': 'spring' } },
  { attachments: [{ filename: 'a.txt', content: 'aGk=', contentType: 'text/plain' }] },
  { sujbect: 'x' },
  { To: 'x' },
];

const FIELDS = { to: TO, from: FROM, subject: SUBJECTS, body: BODIES, subscribed: SUBSCRIBED, reply: REPLY, name: NAME, type: TYPE, data: DATA } as const;
type Field = keyof typeof FIELDS;
const VALID: Record<Field, unknown> = { to: 'ada@example.com', from: 'Shop <orders@shop.example>', subject: 'Hi', body: '<p>Hi</p>', subscribed: ABSENT, reply: ABSENT, name: ABSENT, type: ABSENT, data: ABSENT };

function body(fields: Record<Field, unknown>, extra: Record<string, unknown>): unknown {
  const b: Record<string, unknown> = { ...extra };
  for (const [k, v] of Object.entries(fields)) if (v !== ABSENT) b[k] = v;
  // As the route receives it: parsed JSON.
  return JSON.parse(JSON.stringify(b));
}

/** Every field varied alone from a valid body, and a seeded sample of combinations. */
function corpus(): unknown[] {
  const bodies: unknown[] = [null, [], 'text', 5, true, {}];
  for (const [field, pool] of Object.entries(FIELDS)) for (const v of pool) bodies.push(body({ ...VALID, [field]: v }, {}));
  for (const x of EXTRA) bodies.push(body(VALID, x));
  const pick = seededPick(42);
  const sample = (valid: boolean) =>
    Object.fromEntries(Object.entries(FIELDS).map(([k, pool]) => [k, valid ? pick(pool.slice(0, 3)) : pick(pool)])) as Record<Field, unknown>;
  for (let i = 0; i < 2000; i++) bodies.push(body(sample(false), pick(EXTRA)));
  for (let i = 0; i < 500; i++) bodies.push(body(sample(true), {}));
  return bodies;
}

const handled = (b: unknown) => typeof b === 'object' && b !== null && !Array.isArray(b) && Object.keys(b).every((k) => k in FIELDS);
const hasObjectAddress = (b: unknown) => {
  const { to, from } = b as { to?: unknown; from?: unknown };
  return [from, ...(Array.isArray(to) ? to : [to])].some((a) => typeof a === 'object' && a !== null);
};

describe('acceptSendBody (the fast path of /v1/send validation)', () => {
  const bodies = corpus();

  it('accepts only what SendBody accepts, with the value SendBody returns', () => {
    expectAcceptsOnlyWhatTheSchemaAccepts(bodies, acceptSendBody, full, 250);
  });

  it('takes every body of string addresses without a template, headers or attachments that SendBody accepts', () => {
    const missed = bodies.filter((b) => handled(b) && !hasObjectAddress(b) && full(b).error === undefined && acceptSendBody(b) === undefined);
    expect(missed.map((b) => JSON.stringify(b).slice(0, 200))).toEqual([]);
  });

  it('takes the calls bench/send.mjs sends', () => {
    const call = {
      to: 'buyer7@example.com',
      from: 'orders@shop.example',
      subject: 'Order {{order}} confirmed',
      body: '<html><body><table><tr><td><h1>Hello {{name ?? there}}</h1></td></tr></table></body></html>',
      data: { name: 'Bench', order: { value: 'o-7', persistent: false } },
    };
    expect(acceptSendBody(JSON.parse(JSON.stringify(call)))).toEqual(call);
  });
});
