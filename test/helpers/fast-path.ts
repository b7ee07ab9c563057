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
