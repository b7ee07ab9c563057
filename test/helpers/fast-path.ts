import type { ZodType } from 'zod';
import { expect } from 'vitest';
import { validatorCompiler } from '../../src/http/validation.js';

/**
 * What the corpus tests of the body fast paths (events/track.accept.ts, emails/send.accept.ts)
 * share: the route's full validation, a seeded picker and the "accepts only what the schema
 * accepts" check.
 */

export type Judged = { value?: unknown; error?: unknown };

/** The route's full body validation (the schema and the unknown-field check), as the route compiles it. */
export const routeBodyValidator = (schema: ZodType, url: string) =>
  validatorCompiler({ schema, httpPart: 'body', method: 'POST', url }) as (data: unknown) => Judged;

/** A record of `n` keys `k0…`. */
export const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

/** A field left out of a corpus body. */
export const ABSENT = Symbol('absent');

/** Values of `subscribed`, valid ones first. */
export const SUBSCRIBED_VALUES: unknown[] = [ABSENT, true, false, null, 'true', 1];

/** Values of `data` (a contact's data, contacts' acceptContactData), the 8 valid ones first. */
export const DATA_VALUES: unknown[] = [
  ABSENT,
  {},
  { plan: 'pro', visits: 3, source: null, order: { value: 'o-1', persistent: false } },
  { name: 'Bench', order: { value: 'o-1', persistent: false } },
  { n: -0.5, big: 1e308, yes: true, empty: '' },
  { t: { value: null, persistent: true } },
  { email: 'x@example.com', id: 7 },
  { constructor: 1, toString: 'x' },
  null,
  [],
  'plan',
  { t: { value: 'x' } },
  { t: { value: 'x', persistent: 'no' } },
  { t: { value: 'x', persistent: false, extra: 1 } },
  { t: { value: {}, persistent: false } },
  { t: { value: [1], persistent: false } },
  { o: { a: 1 } },
  { a: [1] },
  { '': 1 },
  { ['k'.repeat(100)]: 1 },
  { ['k'.repeat(101)]: 1 },
  { s: 'x'.repeat(10_000) },
  { s: 'x'.repeat(10_001) },
  { t: { value: 'x'.repeat(10_001), persistent: false } },
  { 'a\u0000': 1 },
  { a: 'x\u0000' },
  { t: { value: 'x\u0000', persistent: false } },
  many(200),
  many(201),
  Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`s${i}`, 'y'.repeat(9_999)])),
];

/** A deterministic picker (a linear congruential sequence from `seed`): the corpus is the same at every run. */
export function seededPick(seed: number): <T>(list: readonly T[]) => T {
  let state = seed;
  return <T,>(list: readonly T[]): T => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return list[state % list.length] as T;
  };
}

/**
 * Whatever `fast` accepts, `full` accepts with an equal value; `fast` accepted more than
 * `atLeast` bodies of the corpus (so the check is not vacuous).
 */
export function expectAcceptsOnlyWhatTheSchemaAccepts(bodies: readonly unknown[], fast: (b: unknown) => unknown, full: (b: unknown) => Judged, atLeast: number): void {
  let accepted = 0;
  for (const b of bodies) {
    const value = fast(b);
    if (value === undefined) continue;
    accepted++;
    const judged = full(b);
    expect(judged.error, JSON.stringify(b).slice(0, 300)).toBeUndefined();
    expect(value).toEqual(judged.value);
  }
  expect(accepted).toBeGreaterThan(atLeast);
}
