import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, uniqueEmail } from '../helpers/accounts.js';
import { committedSince, snapshot } from './cluster.js';
import { CREDENTIAL_RUNS, DOC, FuzzHarness, OPERATIONS, plannedTotal, WRITES_ON_4XX } from './harness.js';
import { GROUPS } from './operations.js';

// Requests with wrong or missing credentials over every operation that needs one, and the
// premises of the other fuzz files: every operation is in one group, ≥ 10,000 requests in all,
// and the write check sees writes (and only writes). test/README.md "Fuzzing".
const h = new FuzzHarness('credentials');
const secured = OPERATIONS.filter((op) => op.security.length > 0);
beforeAll(async () => {
  await h.start();
  // The "ended session" credential: ended by logout before any request uses it.
  const out = await h.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: h.world.logoutCookie } });
  expect(out.statusCode, out.body).toBeLessThan(300);
});
afterAll(async () => {
  console.log(h.report());
  await h.stop();
});

describe('fuzz: the plan', () => {
  it('puts every operation of the document in exactly one group', () => {
    expect(OPERATIONS.length).toBeGreaterThan(100);
    for (const op of OPERATIONS) {
      const groups = Object.entries(GROUPS).filter(([, has]) => has(op.path)).map(([name]) => name);
      expect(groups, op.id).toHaveLength(1);
    }
  });

  it('makes at least 10,000 requests in all', () => {
    expect(plannedTotal()).toBeGreaterThanOrEqual(10_000);
    console.log(`fuzz plan: ${plannedTotal()} requests over ${OPERATIONS.length} operations (${secured.length} also with wrong credentials)`);
  });

  it('generates from the document the app serves', async () => {
    const served = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(served.json<{ paths: object }>().paths).toEqual(JSON.parse(JSON.stringify(DOC.paths)));
  });
});

describe('fuzz: the write check', () => {
  it('sees nothing while requests only read (no background writer in the fuzz app)', async () => {
    const before = await snapshot(h.cluster.probe);
    for (let i = 0; i < 20; i++) {
      const res = await h.app.inject({ method: 'GET', url: '/contacts', headers: bearer(h.world.project.secret) });
      expect(res.statusCode).toBe(200);
    }
    const settings = await h.cluster.probe.query<{ autovacuum: string }>('SHOW autovacuum');
    expect(settings.rows[0]?.autovacuum).toBe('off');
    expect(await committedSince(h.cluster.probe, before)).toEqual([]);
  });

  it('sees a 2xx write (the transaction counter moves and the transaction committed)', async () => {
    const before = await snapshot(h.cluster.probe);
    const res = await h.app.inject({ method: 'POST', url: '/contacts', headers: bearer(h.world.project.secret), payload: { email: uniqueEmail('probe') } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect((await snapshot(h.cluster.probe)).xmax).toBeGreaterThan(before.xmax);
    expect((await committedSince(h.cluster.probe, before)).length).toBeGreaterThanOrEqual(1);
  });

  it('does not count a write that was rolled back', async () => {
    const other = new pg.Client({ connectionString: h.cluster.url });
    await other.connect();
    try {
      const before = await snapshot(h.cluster.probe);
      await other.query('BEGIN');
      await other.query(`UPDATE projects SET name = name WHERE id = $1`, [h.world.project.id]);
      await other.query('ROLLBACK');
      expect((await snapshot(h.cluster.probe)).xmax).toBeGreaterThan(before.xmax);
      expect(await committedSince(h.cluster.probe, before)).toEqual([]);
    } finally {
      await other.end();
    }
  });

  it('the whitelisted 4xx writes still write (else the entry is stale): a failed sign-in is counted', async () => {
    expect(WRITES_ON_4XX.map((w) => `${w.op} ${w.status}`)).toEqual(['POST /auth/login 401']);
    const before = await snapshot(h.cluster.probe);
    const res = await h.app.inject({ method: 'POST', url: '/auth/login', payload: { email: h.world.user.email, password: 'not the password' } });
    expect(res.statusCode).toBe(401);
    expect((await committedSince(h.cluster.probe, before)).length).toBeGreaterThanOrEqual(1);
  });
});

describe('fuzz: wrong or missing credentials are refused (401/403), in the envelope, writing nothing', () => {
  it.each(secured.map((op) => [op.id, op] as const))('%s', async (_id, op) => {
    await h.fuzzCredentials(op, CREDENTIAL_RUNS);
  });

  it('made every planned request', () => {
    expect(h.totals.requests).toBe(secured.length * CREDENTIAL_RUNS);
  });
});
