import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compileCondition } from '../../../src/conditions/index.js';
import type { Filter } from '../../../src/conditions/tree.js';
import { connect, type Db } from '../../../src/db/connection.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import type { Database } from '../../../src/db/schema.js';
import { reconcileDataIndexes } from '../../../src/modules/segments/data-indexes.js';
import { countContacts, withCountPlanning } from '../../../src/modules/segments/segments.repo.js';

/**
 * Count planning (segments.repo.ts, COUNT_EFFECTIVE_CACHE) on a contacts heap larger than the
 * count's effective_cache_size: a comparison matching most of the project is counted by a Bitmap
 * Heap Scan of its data key index (a plain Index Scan without the rule: the planner prices both
 * alike with the whole cache assumed, and the plain one took 2.5× as long at 1M contacts,
 * bench/segments.md "Count planning"); a selective one still uses the index; and the counts are
 * those of a sequential scan. Own database: the seeding and ANALYZE touch no other test's tables.
 */

const N = 200_000; // ~40 MB of heap: more than COUNT_EFFECTIVE_CACHE
let admin: Db;
let conn: Db;
let db: Kysely<Database>;
let dbName: string;
let projectId: string;

function databaseUrl(name: string): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

beforeAll(async () => {
  dbName = `mp_countplan_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  admin = connect(inject('databaseUrl'), { max: 1 });
  await sql`CREATE DATABASE ${sql.id(dbName)}`.execute(admin.db);
  conn = connect(databaseUrl(dbName), { max: 2 });
  db = conn.db;
  await migrateToLatest(db, conn.pool);
  const project = await db
    .insertInto('projects')
    .values({ name: 'counted', public_key: `pk_${randomUUID()}`, secret_key: `sk_${randomUUID()}` })
    .returning('id')
    .executeTakeFirstOrThrow();
  projectId = project.id;
  // As bench/segments.mjs: ages 18..77, a fifth as numeric strings; filler keys for a realistic row width.
  await sql`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ${projectId}::uuid, 'user' || i || '@bench' || (i % 5000) || '.example', true,
      jsonb_build_object('age', CASE WHEN i % 5 = 0 THEN to_jsonb((18 + i % 60)::text) ELSE to_jsonb(18 + i % 60) END,
        'plan', (ARRAY['free','pro','enterprise'])[1 + i % 3], 'country', (ARRAY['DE','FR','US','GB'])[1 + i % 4])
    FROM generate_series(1, ${N}) i`.execute(db);
  await db
    .insertInto('segments')
    .values({
      project_id: projectId,
      name: 'age',
      type: 'DYNAMIC',
      condition: JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.age', operator: 'greaterThan', value: 40 }] }] }),
    })
    .execute();
  expect((await reconcileDataIndexes(db, projectId)).built).toHaveLength(1);
  await sql`VACUUM ANALYZE contacts`.execute(db);
}, 180_000);

afterAll(async () => {
  await conn?.close();
  await sql`DROP DATABASE IF EXISTS ${sql.id(dbName)} WITH (FORCE)`.execute(admin.db);
  await admin?.close();
});

async function query(f: Filter) {
  const where = await compileCondition(db, projectId, { logic: 'AND', groups: [{ filters: [f] }] }, 'c');
  return { where, q: sql`SELECT count(*) AS n FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}` };
}
const plan = async (conn: Kysely<Database>, f: Filter) => {
  const { rows } = await sql<{ 'QUERY PLAN': string }>`EXPLAIN (COSTS OFF) ${(await query(f)).q}`.execute(conn);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
};
const seqCount = async (f: Filter) =>
  db.transaction().execute(async (trx) => {
    await sql`SET LOCAL enable_indexscan = off`.execute(trx);
    await sql`SET LOCAL enable_bitmapscan = off`.execute(trx);
    const { rows } = await sql<{ n: string }>`${(await query(f)).q}`.execute(trx);
    return Number(rows[0]?.n);
  });

describe('count planning on a heap larger than the count effective_cache_size', () => {
  it('counts a comparison matching most of the project with a Bitmap Heap Scan of its data key index', async () => {
    const f: Filter = { field: 'data.age', operator: 'greaterThan', value: 40 };
    const planned = await withCountPlanning(db, (trx) => plan(trx, f));
    expect(planned).toMatch(/Bitmap Heap Scan on contacts c[\s\S]*Bitmap Index Scan on contacts_data_key_/);
    expect(planned).not.toMatch(/(?<!Bitmap )Index Scan using contacts_data_key_/);
    expect(await countContacts(db, projectId, (await query(f)).where)).toBe(await seqCount(f));
    expect(await seqCount(f)).toBe(Array.from({ length: N }, (_, k) => 18 + ((k + 1) % 60)).filter((age) => age > 40).length);
  });

  it('keeps the data key index for a selective comparison, with the same count as a sequential scan', async () => {
    const f: Filter = { field: 'data.age', operator: 'lessThan', value: 20 };
    expect(await withCountPlanning(db, (trx) => plan(trx, f))).toMatch(/contacts_data_key_/);
    expect(await countContacts(db, projectId, (await query(f)).where)).toBe(await seqCount(f));
  });
});
