import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DOC, FuzzHarness, operationsOfGroup, runsOf } from './harness.js';

// Property-based requests over the automation operations of the OpenAPI document (test/README.md "Fuzzing").
const h = new FuzzHarness('automation');
const ops = operationsOfGroup('automation');
beforeAll(() => h.start());
afterAll(async () => {
  console.log(h.report());
  await h.stop();
});

describe('fuzz: automation', () => {
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
