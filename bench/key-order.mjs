// The key order of migration 0039 (docs/scaling.md "Key order"): an events-like table keyed
// (A) `(id, project_id)`, as the schema is; (B) `(project_id, id)`, as DESIGN §1 writes it;
// (C) `(project_id, id)` plus an index on `id`, what (B) needs to serve lookups by id alone.
//
//   node bench/key-order.mjs --url postgres://… [--rows 1000000] [--projects 10000] [--lookups 2000] [--rounds 2]
//
// In a scratch schema of the database at --url (a server's DATA_DIR/postgres.url; dropped at the
// end): per round and layout, in the order A B C C B A …, `--rows` rows spread over `--projects`
// projects inserted in batches of 10,000 (uuid v7 ids, as the schema's default), then `--lookups`
// lookups by id alone and as many by (project_id, id), one statement each. Reports insert rows/s,
// WAL bytes per row, the size of the table's indexes, and the mean time of a lookup. Not a test:
// machine-dependent.
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.DATABASE_URL },
    rows: { type: 'string', default: '1000000' },
    projects: { type: 'string', default: '10000' },
    lookups: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '2' },
  },
});
const { url } = opts;
const [rows, projects, lookups, rounds] = [opts.rows, opts.projects, opts.lookups, opts.rounds].map(Number);
if (!url) {
  console.error('usage: node bench/key-order.mjs --url postgres://…');
  process.exit(2);
}

const LAYOUTS = {
  A: ['PRIMARY KEY (id, project_id)'],
  B: ['PRIMARY KEY (project_id, id)'],
  C: ['PRIMARY KEY (project_id, id)', 'CREATE INDEX ON key_order_bench.t (id)'],
};

const db = new pg.Client({ connectionString: url, application_name: 'key-order-bench' });
await db.connect();
const q = (text, params) => db.query(text, params);
const { rows: [version] } = await q('SHOW server_version');
console.log(`PostgreSQL ${version.server_version}; ${rows.toLocaleString('en')} rows over ${projects.toLocaleString('en')} projects, ${lookups} lookups each way, ${rounds} rounds`);

await q('DROP SCHEMA IF EXISTS key_order_bench CASCADE');
await q('CREATE SCHEMA key_order_bench');
await q(`CREATE TABLE key_order_bench.projects AS SELECT n, gen_random_uuid() AS id FROM generate_series(1, $1) n`, [projects]);
await q('CREATE UNIQUE INDEX ON key_order_bench.projects (n)');
await q('ANALYZE key_order_bench.projects');

async function run(layout) {
  const [key, extra] = LAYOUTS[layout];
  await q('DROP TABLE IF EXISTS key_order_bench.t');
  await q(`CREATE TABLE key_order_bench.t (id uuid NOT NULL DEFAULT uuid_generate_v7(), project_id uuid NOT NULL,
    name text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), ${key})`);
  if (extra) await q(extra);
  const { rows: [w0] } = await q('SELECT pg_current_wal_lsn() AS lsn');
  const t0 = performance.now();
  for (let done = 0; done < rows; done += 10_000) {
    await q(`INSERT INTO key_order_bench.t (project_id, name)
      SELECT p.id, 'page_view' FROM generate_series(1, $1) g JOIN key_order_bench.projects p ON p.n = 1 + (g + $3) % $2`,
      [Math.min(10_000, rows - done), projects, done]);
  }
  const insertMs = performance.now() - t0;
  const { rows: [w1] } = await q(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS bytes,
    pg_indexes_size('key_order_bench.t')::float8 AS index_bytes`, [w0.lsn]);
  await q('ANALYZE key_order_bench.t');
  const { rows: sample } = await q(`SELECT id, project_id FROM key_order_bench.t TABLESAMPLE SYSTEM (1) LIMIT $1`, [lookups]);
  const time = async (text, params) => {
    const t = performance.now();
    for (const p of params) await q(text, p);
    return ((performance.now() - t) / params.length) * 1000;
  };
  const byId = await time('SELECT name FROM key_order_bench.t WHERE id = $1', sample.map((r) => [r.id]));
  const byBoth = await time('SELECT name FROM key_order_bench.t WHERE project_id = $1 AND id = $2', sample.map((r) => [r.project_id, r.id]));
  const { rows: plan } = await q('EXPLAIN SELECT name FROM key_order_bench.t WHERE id = $1', [sample[0].id]);
  return { layout, insertRowsPerSec: rows / (insertMs / 1000), walBytesPerRow: w1.bytes / rows, indexMiB: w1.index_bytes / 2 ** 20, byIdUs: byId, byBothUs: byBoth, byIdPlan: plan[0]['QUERY PLAN'] };
}

const order = [];
for (let r = 0; r < rounds; r++) order.push(...(r % 2 === 0 ? ['A', 'B', 'C'] : ['C', 'B', 'A']));
const results = [];
try {
  for (const layout of order) {
    const res = await run(layout);
    results.push(res);
    console.log(`${layout}  insert ${res.insertRowsPerSec.toFixed(0)} rows/s  WAL ${res.walBytesPerRow.toFixed(0)} B/row  indexes ${res.indexMiB.toFixed(1)} MiB  by id ${res.byIdUs.toFixed(0)} µs  by (project_id, id) ${res.byBothUs.toFixed(0)} µs  [${res.byIdPlan}]`);
  }
} finally {
  await q('DROP SCHEMA key_order_bench CASCADE');
  await db.end();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log('\nmedians:');
for (const layout of Object.keys(LAYOUTS)) {
  const mine = results.filter((r) => r.layout === layout);
  console.log(`${layout} ${LAYOUTS[layout].join(' + ')}: insert ${median(mine.map((r) => r.insertRowsPerSec)).toFixed(0)} rows/s, WAL ${median(mine.map((r) => r.walBytesPerRow)).toFixed(0)} B/row, indexes ${median(mine.map((r) => r.indexMiB)).toFixed(1)} MiB, lookup by id ${median(mine.map((r) => r.byIdUs)).toFixed(0)} µs, by (project_id, id) ${median(mine.map((r) => r.byBothUs)).toFixed(0)} µs`);
}
