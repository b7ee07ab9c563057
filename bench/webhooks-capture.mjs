// The write cost of the outgoing-webhook capture trigger on `events` (migration 0028,
// docs/webhooks-outgoing.md "Capture"): event inserts timed with the trigger enabled (A) and
// disabled (B), alternated A B B A …, in three cases:
//   none     — the project has no endpoint (most projects);
//   other    — the project has an enabled endpoint subscribed to every type, the events are custom
//              names no endpoint can subscribe to (what /v1/track inserts);
//   captured — the same project, email.open events: one delivery row per event and the wake job.
//
//   node bench/webhooks-capture.mjs --url postgres://… [--rounds 4] [--statements 500] [--rows 20]
//
// In new projects of the database at --url (a server's DATA_DIR/postgres.url, run with ROLE=api so
// no worker delivers the captured rows; nothing else should write there): `--statements` INSERTs of
// `--rows` events each per round and case, committed one by one (the /v1/track group commit writes
// ~10–50 events a statement). Reports wall time, the CPU time of the PostgreSQL backend serving
// the statements (/proc: run on the database's machine), and WAL bytes, per event. The trigger is
// enabled again at the end. Not a test: machine-dependent.
import { randomUUID } from 'node:crypto';
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
const statements = Number(arg('statements', '500'));
const rowsPer = Number(arg('rows', '20'));
if (!url) {
  console.error('usage: node bench/webhooks-capture.mjs --url postgres://…');
  process.exit(2);
}

const client = new pg.Client({ connectionString: url, application_name: 'webhooks-capture' });
await client.connect();

async function project(name) {
  const { rows: [p] } = await client.query(
    `INSERT INTO projects (name, public_key, secret_key) VALUES ($1, 'pk_' || md5(random()::text), 'sk_' || md5(random()::text)) RETURNING id`,
    [name],
  );
  const { rows } = await client.query(
    `INSERT INTO contacts (project_id, email, subscribed) SELECT $1, $2 || g || '@bench.example', true FROM generate_series(1, 2000) g RETURNING id`,
    [p.id, name],
  );
  return { id: p.id, contacts: rows.map((r) => r.id) };
}
const plain = await project('capture-none');
const subscribed = await project('capture-endpoint');
await client.query(
  `INSERT INTO webhook_endpoints (project_id, url, events, secret)
   VALUES ($1, 'http://127.0.0.1:9/hook', ARRAY['email.sent','email.delivery','email.open','email.click','email.bounce','email.complaint',
     'contact.subscribed','contact.unsubscribed','campaign.sent','workflow.completed','workflow.failed'], 'v1.sealed-in-the-bench')`,
  [subscribed.id],
);

const cases = [
  { name: 'none', project: plain, event: 'page-view', data: () => ({ plan: 'pro' }) },
  { name: 'other', project: subscribed, event: 'page-view', data: () => ({ plan: 'pro' }) },
  { name: 'captured', project: subscribed, event: 'email.open', data: () => ({ emailId: randomUUID() }) },
];

const { rows: [{ pid }] } = await client.query('SELECT pg_backend_pid() AS pid');
function backendCpu() {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const s = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(s[11]) + Number(s[12])) / 100;
  } catch {
    return 0;
  }
}
const walLsn = async () => (await client.query('SELECT pg_current_wal_insert_lsn() AS lsn')).rows[0].lsn;
const walBytes = async (from, to) => Number((await client.query('SELECT pg_wal_lsn_diff($1, $2) AS d', [to, from])).rows[0].d);

async function round(c, enabled) {
  await client.query(`ALTER TABLE events ${enabled ? 'ENABLE' : 'DISABLE'} TRIGGER events_webhook_capture`);
  const cpu0 = backendCpu();
  const lsn0 = await walLsn();
  const t0 = performance.now();
  for (let s = 0; s < statements; s++) {
    const ids = Array.from({ length: rowsPer }, (_, i) => c.project.contacts[(s * rowsPer + i) % c.project.contacts.length]);
    const data = ids.map(() => JSON.stringify(c.data()));
    await client.query(
      `INSERT INTO events (project_id, contact_id, name, data) SELECT $1, u.c, $2, u.d::jsonb FROM unnest($3::uuid[], $4::text[]) AS u(c, d)`,
      [c.project.id, c.event, ids, data],
    );
  }
  const ms = performance.now() - t0;
  const n = statements * rowsPer;
  return { usWall: (ms * 1000) / n, usCpu: ((backendCpu() - cpu0) * 1e6) / n, wal: (await walBytes(lsn0, await walLsn())) / n };
}

const fmt = (x) => x.toFixed(1);
try {
  for (const c of cases) {
    const results = { A: [], B: [] };
    for (let r = 0; r < rounds; r++) {
      // A B B A A B B A …: drift in the machine's load falls on both arms alike.
      const order = r % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
      for (const arm of order) results[arm].push(await round(c, arm === 'A'));
    }
    const mean = (list, k) => list.reduce((s, x) => s + x[k], 0) / list.length;
    const line = (arm) => `wall ${fmt(mean(results[arm], 'usWall'))} µs, backend CPU ${fmt(mean(results[arm], 'usCpu'))} µs, WAL ${fmt(mean(results[arm], 'wal'))} B per event`;
    console.log(`${c.name.padEnd(9)} trigger on : ${line('A')}`);
    console.log(`${''.padEnd(9)} trigger off: ${line('B')}`);
  }
} finally {
  await client.query('ALTER TABLE events ENABLE TRIGGER events_webhook_capture');
  await client.end();
}
