// The write cost of migration 0030's two indexes on workflow_executions (the activity feed's):
// the workflow engine's two writes of an execution, timed with and without them, alternated.
//
//   node bench/activity-index-cost.mjs --url postgres://… [--rounds 4] [--batches 40] [--batch 500]
//
// In a new project of the database at --url (a server's DATA_DIR/postgres.url; run it while
// nothing else writes there): 20,000 contacts and a workflow, then per round `--batches`
// statements of `--batch` rows each way, committed one by one, as the engine writes them:
// enrolment (INSERT … SELECT FROM unnest(contact ids), RUNNING) and the end (UPDATE … SET status
// 'COMPLETED', completed_at = now() by id). Rounds alternate with the indexes (A) and with them
// dropped (B), A B B A …; the indexes are re-created at the end. Reports wall time, the CPU time
// of the PostgreSQL backend serving the statements (/proc: run on the database's machine, as a
// user who may read its stat file), and the WAL written (the least noisy measure on a shared
// machine). Not a test: machine-dependent.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const url = arg('url', process.env.DATABASE_URL);
const rounds = Number(arg('rounds', '4'));
const batches = Number(arg('batches', '40'));
const batch = Number(arg('batch', '500'));
if (!url) {
  console.error('usage: node bench/activity-index-cost.mjs --url postgres://…');
  process.exit(2);
}

const INDEXES = {
  workflow_executions_project_started_idx: 'CREATE INDEX workflow_executions_project_started_idx ON workflow_executions (project_id, started_at, id)',
  workflow_executions_project_ended_idx: `CREATE INDEX workflow_executions_project_ended_idx ON workflow_executions (project_id, status, completed_at, id)
    WHERE status IN ('COMPLETED', 'EXITED', 'FAILED')`,
};

const client = new pg.Client({ connectionString: url, application_name: 'activity-index-cost' });
await client.connect();
const { rows: [project] } = await client.query(
  `INSERT INTO projects (name, public_key, secret_key) VALUES ('index cost', 'pk_' || md5(random()::text), 'sk_' || md5(random()::text)) RETURNING id`,
);
const pool = batch * 2;
const { rows: contacts } = await client.query(
  `INSERT INTO contacts (project_id, email, subscribed) SELECT $1, 'cost' || g || '@bench.example', true FROM generate_series(1, $2) g RETURNING id`,
  [project.id, pool * 20],
);
const { rows: [workflow] } = await client.query(
  `INSERT INTO workflows (project_id, name, trigger_config) VALUES ($1, 'cost', '{"eventName": "cost"}') RETURNING id`,
  [project.id],
);

const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
/** CPU seconds (user + system) of the backend; 0 when /proc cannot tell. */
function backendCpu() {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}
const walLsn = async () => (await client.query('SELECT pg_current_wal_insert_lsn() AS lsn')).rows[0].lsn;

async function round(withIndexes) {
  if (!withIndexes) for (const name of Object.keys(INDEXES)) await client.query(`DROP INDEX ${name}`);
  const cpu0 = backendCpu();
  const lsn0 = await walLsn();
  let insertMs = 0;
  let endMs = 0;
  for (let b = 0; b < batches; b++) {
    const ids = contacts.slice((b * batch) % contacts.length, ((b * batch) % contacts.length) + batch).map((c) => c.id);
    let t0 = performance.now();
    const { rows } = await client.query(
      `INSERT INTO workflow_executions (project_id, workflow_id, contact_id) SELECT $1, $2, c FROM unnest($3::uuid[]) c RETURNING id`,
      [project.id, workflow.id, ids],
    );
    insertMs += performance.now() - t0;
    t0 = performance.now();
    await client.query(
      `UPDATE workflow_executions SET status = 'COMPLETED', completed_at = now(), updated_at = now() WHERE project_id = $1 AND id = ANY($2::uuid[])`,
      [project.id, rows.map((r) => r.id)],
    );
    endMs += performance.now() - t0;
  }
  const cpu = backendCpu() - cpu0;
  const { rows: [{ wal }] } = await client.query('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1)::bigint AS wal', [lsn0]);
  if (!withIndexes) for (const create of Object.values(INDEXES)) await client.query(create);
  return { insertMs, endMs, cpu, wal: Number(wal) };
}

try {
  const n = batches * batch;
  const results = { A: [], B: [] };
  for (let r = 0; r < rounds; r++) {
    const arm = [0, 3].includes(r % 4) ? 'A' : 'B';
    const result = await round(arm === 'A');
    results[arm].push(result);
    const { insertMs, endMs, cpu, wal } = result;
    const per = (ms) => ((ms / n) * 1000).toFixed(1);
    console.log(
      `round ${r + 1} ${arm === 'A' ? 'with indexes   ' : 'without indexes'}: insert ${insertMs.toFixed(0)} ms, end ${endMs.toFixed(0)} ms for ${n} executions` +
        ` (${per(insertMs)} + ${per(endMs)} µs each); backend CPU ${(cpu * 1e6 / n).toFixed(1)} µs, WAL ${(wal / n).toFixed(0)} bytes per execution`,
    );
  }
  const mean = (xs, f) => xs.reduce((a, x) => a + f(x), 0) / xs.length;
  for (const [label, f, unit] of [
    ['wall', (x) => ((x.insertMs + x.endMs) * 1000) / n, 'µs'],
    ['backend CPU', (x) => (x.cpu * 1e6) / n, 'µs'],
    ['WAL', (x) => x.wal / n, 'bytes'],
  ]) {
    const a = mean(results.A, f);
    const b = mean(results.B, f);
    console.log(`${label} per execution: with ${a.toFixed(1)} ${unit}, without ${b.toFixed(1)} ${unit}: ${(((a - b) / b) * 100).toFixed(1)} %`);
  }
} finally {
  await client.query('DELETE FROM projects WHERE id = $1', [project.id]);
  await client.end();
}
