import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COUNT_EFFECTIVE_CACHE, countContacts } from '../../../src/modules/segments/segments.repo.js';
import { newProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { seedPeople } from '../../conditions/fixtures.js';

/**
 * Counts are planned with effective_cache_size at COUNT_EFFECTIVE_CACHE (segments.repo.ts: a count
 * matching most of a large project then reads the heap in physical order, bench/segments.md). The
 * condition below is true only while the count's statement runs with that setting, so each count
 * is the project's size with the rule and 0 without it; the caller's own setting is left as it was.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t?.close();
});

const planned = sql<boolean>`current_setting('effective_cache_size') = ${COUNT_EFFECTIVE_CACHE}::text`;
const setting = async (db: Parameters<typeof countContacts>[0]) =>
  (await sql<{ v: string }>`SELECT current_setting('effective_cache_size') AS v`.execute(db)).rows[0]?.v;

describe('countContacts planning', () => {
  it('counts with the count effective_cache_size, alone and inside a caller transaction, and restores the caller setting', async () => {
    const { project } = await newProject(t.app);
    const people = await seedPeople(t.db, project.id);
    const all = await countContacts(t.db.db, project.id, sql<boolean>`TRUE`);
    expect(all).toBe(people.size);
    const outside = await setting(t.db.db);
    expect(outside).not.toBe(COUNT_EFFECTIVE_CACHE);

    expect(await countContacts(t.db.db, project.id, planned)).toBe(all);

    await t.db.db.transaction().execute(async (trx) => {
      await sql`SET LOCAL effective_cache_size = '3GB'`.execute(trx);
      expect(await countContacts(trx, project.id, planned)).toBe(all);
      expect(await setting(trx)).toBe('3GB');
    });
    expect(await setting(t.db.db)).toBe(outside);
  });
});
