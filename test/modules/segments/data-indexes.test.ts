import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { compileCondition } from '../../../src/conditions/index.js';
import type { Filter } from '../../../src/conditions/tree.js';
import { connect, type Db } from '../../../src/db/connection.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import type { Database } from '../../../src/db/schema.js';
import { dataIndexName, MAX_DATA_INDEXES_PER_PROJECT, reconcileDataIndexes, sweepDataIndexes } from '../../../src/modules/segments/data-indexes.js';

/**
 * Data key indexes (docs/conditions.md, "Data key indexes"): built for the keys a project's
 * segments filter on, used by the planner for that project only, and giving the same answers as
 * the row filters for every value type. Own database (like test/conditions/explain.test.ts): the
 * indexes, ANALYZE and the orphan sweep touch no other test's tables.
 */

const N = 3000;
let admin: Db;
let conn: Db;
let db: Kysely<Database>;
let dbName: string;
let a: string;
let b: string;

const LONG_NUMBER = '9'.repeat(1000); // a number (1,000 characters)
const TOO_LONG_NUMBER = '9'.repeat(1001); // text: past the bound
/** The longest string a contact may hold, digits that do not compress (a repeated digit would fit a btree entry compressed). */
const HUGE = ((): string => {
  let x = 42;
  return Array.from({ length: 10_000 }, () => String(((x = (Math.imul(x, 1_103_515_245) + 12_345) >>> 0) >>> 16) % 10)).join('');
})();

/** Values of `age` and `company` by contact number; every type and edge the semantics name. */
const SPECIAL: { age?: unknown; company?: unknown }[] = [
  { age: LONG_NUMBER },
  { age: TOO_LONG_NUMBER },
  { age: HUGE },
  { age: ' 41 ' },
  { age: '+41' },
  { age: '-5.5' },
  { age: '.5' },
  { age: '41.' },
  { age: '1e5' },
  { age: 'abc' },
  { age: true },
  { age: '' },
  { age: 40.0000001 },
  { company: 'Under 50% off' },
  { company: 'UNDER_50' },
  { company: 9612 },
];

function databaseUrl(name: string): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

async function newProject(name: string): Promise<string> {
  const row = await db
    .insertInto('projects')
    .values({ name, public_key: `pk_${randomUUID()}`, secret_key: `sk_${randomUUID()}` })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The same population in each project: ages as numbers, numeric strings and text; companies on a quarter. */
async function seed(projectId: string): Promise<void> {
  await sql`INSERT INTO contacts (project_id, email, subscribed, data)
    SELECT ${projectId}::uuid, 'u' || i || '@' || ${projectId.slice(-8)} || '.example', true,
      jsonb_strip_nulls(jsonb_build_object(
        'age', CASE i % 4 WHEN 0 THEN to_jsonb(i % 90) WHEN 1 THEN to_jsonb((i % 90)::text) WHEN 2 THEN to_jsonb('x' || i) END,
        'company', CASE WHEN i % 4 = 0 THEN 'Company ' || (i % 997) END))
    FROM generate_series(1, ${N}) i`.execute(db);
  for (const [i, data] of SPECIAL.entries()) {
    await db
      .insertInto('contacts')
      .values({ project_id: projectId, email: `special${i}@x.example`, subscribed: true, data: JSON.stringify(data) })
      .execute();
  }
}

async function segment(projectId: string, filters: Filter[]): Promise<string> {
  const row = await db
    .insertInto('segments')
    .values({ project_id: projectId, name: randomUUID(), type: 'DYNAMIC', condition: JSON.stringify({ logic: 'AND', groups: [{ filters }] }) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** The count query the segment code runs, in one transaction with `settings` (SET LOCAL). */
async function count(projectId: string, f: Filter, settings: string[] = []): Promise<{ n: number; plan: string }> {
  const where = await compileCondition(db, projectId, { logic: 'AND', groups: [{ filters: [f] }] }, 'c');
  const q = sql<{ n: number }>`SELECT count(*)::int AS n FROM contacts c WHERE c.project_id = ${projectId}::uuid AND ${where}`;
  return db.transaction().execute(async (trx) => {
    for (const s of settings) await sql.raw(`SET LOCAL ${s}`).execute(trx);
    const { rows } = await q.execute(trx);
    const explained = await sql<{ 'QUERY PLAN': string }>`EXPLAIN (COSTS OFF) ${q}`.execute(trx);
    return { n: rows[0]?.n ?? -1, plan: explained.rows.map((r) => r['QUERY PLAN']).join('\n') };
  });
}
const INDEXED = ['enable_seqscan = off'];
const ROW_FILTER = ['enable_indexscan = off', 'enable_bitmapscan = off', 'enable_indexonlyscan = off'];

const FILTERS: Filter[] = [
  { field: 'data.company', operator: 'exists' },
  { field: 'data.company', operator: 'contains', value: 'company 96' },
  { field: 'data.company', operator: 'contains', value: '50%' },
  { field: 'data.company', operator: 'contains', value: '96' },
  { field: 'data.age', operator: 'exists' },
  { field: 'data.age', operator: 'greaterThan', value: 40 },
  { field: 'data.age', operator: 'greaterThan', value: '40' },
  { field: 'data.age', operator: 'greaterThanOrEqual', value: 41 },
  { field: 'data.age', operator: 'lessThan', value: 0 },
  { field: 'data.age', operator: 'lessThanOrEqual', value: ' 0.5 ' },
  { field: 'data.age', operator: 'greaterThan', value: 1e300 },
];

beforeAll(async () => {
  dbName = `mp_dataidx_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  admin = connect(inject('databaseUrl'), { max: 1 });
  await sql`CREATE DATABASE ${sql.id(dbName)}`.execute(admin.db);
  conn = connect(databaseUrl(dbName), { max: 3 });
  db = conn.db;
  await migrateToLatest(db, conn.pool);
  a = await newProject('indexed');
  b = await newProject('other');
  await seed(a);
  await seed(b);
  await segment(a, [
    { field: 'data.age', operator: 'greaterThan', value: 40 },
    { field: 'data.company', operator: 'exists' },
    { field: 'data.company', operator: 'contains', value: 'x' },
    { field: 'data.plan', operator: 'equals', value: 'pro' }, // equals: the GIN on data already serves it
    { field: 'data.signup', operator: 'greaterThan', value: '2024-01-01' }, // a date: no index can
  ]);
  // The same segment in B, which stays under the contact threshold.
  await segment(b, [{ field: 'data.age', operator: 'greaterThan', value: 40 }]);
}, 120_000);

afterAll(async () => {
  await conn?.close();
  await sql`DROP DATABASE IF EXISTS ${sql.id(dbName)} WITH (FORCE)`.execute(admin.db);
  await admin?.close();
});

describe('data key indexes', () => {
  it('builds, for a project past the threshold, one index per (key, kind) its segments can use, holding that project and key only', async () => {
    expect(await reconcileDataIndexes(db, b, N + SPECIAL.length + 1)).toEqual({ built: [], dropped: [] }); // under the threshold
    const built = await reconcileDataIndexes(db, a, N);
    expect(built.built).toHaveLength(3);
    const { rows } = await sql<{ key: string; kind: string; ready: boolean; def: string }>`
      SELECT d.key, d.kind, d.ready, pg_get_indexdef(c.oid) AS def
      FROM contact_data_indexes d JOIN pg_class c ON c.relname = 'contacts_data_key_' || d.id ORDER BY d.key, d.kind`.execute(db);
    expect(rows.map((r) => [r.key, r.kind, r.ready])).toEqual([
      ['age', 'value', true],
      ['company', 'text', true],
      ['company', 'value', true],
    ]);
    for (const r of rows) {
      expect(r.def).toContain(`WHERE ((project_id = '${a}'::uuid) AND (data ? '${r.key}'::text))`);
    }
    // Nothing left to do: a second run builds and drops nothing.
    expect(await reconcileDataIndexes(db, a, N)).toEqual({ built: [], dropped: [] });
    await sql`ANALYZE contacts`.execute(db);
  });

  it('gives the row filters’ answers for every value type, through the index for that project only', async () => {
    for (const f of FILTERS) {
      const label = JSON.stringify(f);
      const viaIndex = await count(a, f, INDEXED);
      const viaRows = await count(a, f, ROW_FILTER);
      expect(viaIndex.n, label).toBe(viaRows.n);
      expect(viaRows.plan, label).not.toMatch(/contacts_data_key_/);
      expect(viaIndex.plan, `${label}\n${viaIndex.plan}`).toMatch(/contacts_data_key_\d+/);
      expect(viaIndex.plan, label).not.toMatch(/Seq Scan/);
      // B has the same rows and no index: the same answer, and A's index is never offered to it.
      const other = await count(b, f, INDEXED);
      expect(other.n, label).toBe(viaRows.n);
      expect(other.plan, label).not.toMatch(/contacts_data_key_/);
    }
  });

  it('compares numbers and plain decimal strings of at most 1,000 characters as numbers, nothing else', async () => {
    const gt40 = await count(a, { field: 'data.age', operator: 'greaterThan', value: 40 }, INDEXED);
    // Of the generated rows: ages 41..89 as number (i % 4 = 0) or string (i % 4 = 1).
    let expected = 0;
    for (let i = 1; i <= N; i++) if ((i % 4 === 0 || i % 4 === 1) && i % 90 > 40) expected++;
    // Special rows: 999…9 (1,000 digits), ' 41 ', '+41', '41.', 40.0000001; not 1,001 digits, 10,000 digits, '1e5', 'abc', true, ''.
    expect(gt40.n).toBe(expected + 5);
    const exists = await count(a, { field: 'data.age', operator: 'exists' }, INDEXED);
    expect(exists.plan).toMatch(/Index Only Scan using contacts_data_key_\d+/);
  });

  it('keeps contact writes working with any string under an index (a 10,000-digit value is not indexed as a number)', async () => {
    await sql`UPDATE contacts SET data = data || jsonb_build_object('age', ${HUGE}::text, 'company', ${HUGE}::text)
      WHERE project_id = ${a}::uuid AND email = 'u1@' || ${a.slice(-8)} || '.example'`.execute(db);
    const row = await db.selectFrom('contacts').select('data').where('project_id', '=', a).where('email', '=', `u1@${a.slice(-8)}.example`).executeTakeFirstOrThrow();
    expect((row.data as { age: string }).age).toHaveLength(10_000);
  });

  it('drops the indexes no segment uses any more, and those of deleted projects', async () => {
    await db.deleteFrom('segments').where('project_id', '=', a).execute();
    const one = await segment(a, [{ field: 'data.age', operator: 'lessThan', value: 3 }]);
    const r = await reconcileDataIndexes(db, a, N);
    expect(r.built).toEqual([]);
    expect(r.dropped).toHaveLength(2); // company (value and text); age stays
    const c = await newProject('deleted later');
    await seed(c);
    await segment(c, [{ field: 'data.company', operator: 'contains', value: 'y' }]);
    const [built] = (await reconcileDataIndexes(db, c, N)).built;
    await db.deleteFrom('projects').where('id', '=', c).execute();
    // The sweep also reconciles B, whose segment now passes a threshold of N contacts.
    const swept = await sweepDataIndexes(db, N);
    expect(swept.dropped).toEqual([built]);
    expect(swept.built).toHaveLength(1);
    const { rows } = await sql<{ name: string }>`
      SELECT relname AS name FROM pg_class WHERE relname LIKE 'contacts\\_data\\_key\\_%' ORDER BY 1`.execute(db);
    const { rows: catalogue } = await sql<{ id: string }>`SELECT id::text FROM contact_data_indexes ORDER BY id`.execute(db);
    expect(rows.map((x) => x.name)).toEqual(catalogue.map((x) => dataIndexName(x.id)));
    expect(catalogue).toHaveLength(2); // A's age and B's age
    await db.deleteFrom('segments').where('id', '=', one).execute();
  });

  it(`builds at most ${MAX_DATA_INDEXES_PER_PROJECT} per project, the most used first`, async () => {
    const filters = Array.from({ length: MAX_DATA_INDEXES_PER_PROJECT + 3 }, (_, i) => ({ field: `data.k${i}`, operator: 'exists' as const }));
    await segment(a, filters);
    await segment(a, [{ field: 'data.k10', operator: 'exists' }]); // k10 used twice: in
    const r = await reconcileDataIndexes(db, a, N);
    const { rows } = await sql<{ key: string }>`SELECT key FROM contact_data_indexes WHERE project_id = ${a}::uuid ORDER BY key`.execute(db);
    expect(rows).toHaveLength(MAX_DATA_INDEXES_PER_PROJECT);
    expect(rows.map((x) => x.key)).toContain('k10');
    expect(r.dropped).toHaveLength(1); // age: no segment filters on it now
  });
});
