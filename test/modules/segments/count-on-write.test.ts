import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWithin } from '../../../src/modules/segments/compute.js';
import { bearer, newProject } from '../../helpers/accounts.js';
import { seedPeople } from '../../conditions/fixtures.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';

// Own database: one test holds a table lock that would stall other files' queries.
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => {
  await t?.close();
});

const tree = (...filters: object[]) => ({ logic: 'AND', groups: [{ filters }] });
const PRO = tree({ field: 'data.plan', operator: 'equals', value: 'pro' });

/** A project with the known population of test/conditions/fixtures.ts, and a caller with its key. */
async function seeded() {
  const { project } = await newProject(t.app);
  await seedPeople(t.db, project.id);
  return (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: bearer(project.secret), ...(payload && { payload }) });
}

describe('counting a DYNAMIC segment when it is written', () => {
  it('create and a condition change count at once; the members page then reuses that count', async () => {
    const call = await seeded();
    const created = (await call('POST', '/segments', { name: 'Pro', condition: PRO })).json<{
      id: string;
      memberCount: number;
    }>();
    expect(created.memberCount).toBe(2);
    const row = await t.db.db.selectFrom('segments').select(['member_count', 'counted_at']).where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ member_count: 2, counted_at: expect.any(Date) });
    const patched = (await call('PATCH', `/segments/${created.id}`, { condition: tree({ field: 'subscribed', operator: 'equals', value: true }) })).json<{
      memberCount: number;
    }>();
    expect(patched.memberCount).toBe(10);
    const renamed = (await call('PATCH', `/segments/${created.id}`, { name: 'Subscribers' })).json<{ memberCount: number }>();
    expect(renamed.memberCount).toBe(10); // no condition change: the cached count
    expect((await call('GET', `/segments/${created.id}/contacts`)).json<{ total: number }>().total).toBe(10);
    const staticSeg = (await call('POST', '/segments', { name: 'Hand', type: 'STATIC' })).json<{ memberCount: number }>();
    expect(staticSeg.memberCount).toBe(0);
  });

  it('gives up on a count slower than its time budget, leaving the cached count alone', async () => {
    const call = await seeded();
    const res = await call('POST', '/segments', { name: 'Slow', condition: PRO });
    const seg = await t.db.db.selectFrom('segments').selectAll().where('id', '=', res.json<{ id: string }>().id).executeTakeFirstOrThrow();
    await t.db.db.updateTable('segments').set({ member_count: 7, counted_at: null }).where('id', '=', seg.id).execute();
    // Another session holds contacts exclusively: the count waits, then its statement_timeout fires.
    const locker = new pg.Client({ connectionString: t.config.databaseUrl });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE contacts IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      expect(await countWithin(t.db.db, seg, 100)).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    const after = await t.db.db.selectFrom('segments').select(['member_count', 'counted_at']).where('id', '=', seg.id).executeTakeFirstOrThrow();
    expect(after).toEqual({ member_count: 7, counted_at: null });
    expect(await countWithin(t.db.db, seg)).toBe(2);
  });
});
