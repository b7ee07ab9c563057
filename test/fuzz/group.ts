import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOC, FuzzHarness, operationsOfGroup, runsOf } from './harness.js';
import type { GroupName } from './operations.js';

/**
 * The fuzz tests of one group of operations (test/README.md "Fuzzing"), on a cluster of its own.
 * One file per group calls it, so that vitest runs the groups side by side.
 */
export function describeFuzzGroup(group: GroupName): void {
  const h = new FuzzHarness(group);
  const ops = operationsOfGroup(group);
  beforeAll(() => h.start());
  afterAll(async () => {
    console.log(h.report());
    await h.stop();
  });

  describe(`fuzz: ${group}`, () => {
    it('serves the document the requests are generated from', async () => {
      const served = await h.app.inject({ method: 'GET', url: '/openapi.json' });
      expect(served.json<{ paths: object }>().paths).toEqual(JSON.parse(JSON.stringify(DOC.paths)));
    });

    it.each(ops.map((op) => [op.id, op] as const))('%s: no 5xx, 4xx in the envelope and writing nothing', async (_id, op) => {
      await h.fuzz(op, runsOf(op));
    });

    it('made every planned request', () => {
      expect(h.totals.requests).toBe(ops.reduce((n, op) => n + runsOf(op), 0));
    });
  });
}
