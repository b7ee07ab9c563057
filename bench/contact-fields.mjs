// Times GET /contacts/fields against a running server, cold (the server's cached answer dropped
// first) and cached, and with --url compares its coverages with an exact count in SQL.
//
//   node bench/contact-fields.mjs --base http://127.0.0.1:8080 --key sk_… [--runs 5] [--url postgres://…]
//   node bench/contact-fields.mjs --base … --url postgres://… --project <id>   # key read from the database
//
// Cold: each timed GET follows a DELETE /contacts/fields/<a key no contact has> (untimed), which
// drops the project's cached answer and changes nothing else. Wall time of the whole request, body
// read; median, min and max of --runs. Not a test: numbers depend on the machine.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const base = arg('base', process.env.BASE_URL ?? 'http://127.0.0.1:8080');
const url = arg('url', process.env.DATABASE_URL);
const runs = Number(arg('runs', '5'));
const NO_SUCH_KEY = 'bench_fields_no_such_key';

let key = arg('key', process.env.SECRET_KEY);
let projectId = arg('project');
const db = url ? new pg.Client({ connectionString: url, application_name: 'bench-contact-fields' }) : undefined;
await db?.connect();
if (!key && db && projectId) ({ rows: [{ secret_key: key }] } = await db.query('SELECT secret_key FROM projects WHERE id = $1', [projectId]));
if (!key) {
  console.error('usage: node bench/contact-fields.mjs --base http://127.0.0.1:8080 --key sk_… [--url postgres://…] | --url … --project <id>');
  process.exit(2);
}

async function call(method, path) {
  const started = performance.now();
  const res = await globalThis.fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}` } });
  const body = res.status === 204 ? undefined : await res.json();
  const ms = performance.now() - started;
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
  return { ms, body };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const line = (name, times) =>
  console.log(`${name.padEnd(8)} median ${median(times).toFixed(0).padStart(5)} ms  min ${Math.min(...times).toFixed(0)}  max ${Math.max(...times).toFixed(0)}  (${times.map((t) => t.toFixed(0)).join(', ')})  load ${readFileSync('/proc/loadavg', 'utf8').trim()}`);

console.log(`${base}  ${runs} runs, times in ms`);
const cold = [];
let answer;
for (let i = 0; i < runs; i++) {
  await call('DELETE', `/contacts/fields/${NO_SUCH_KEY}`);
  const r = await call('GET', '/contacts/fields');
  cold.push(r.ms);
  answer = r.body;
}
line('cold', cold);
const cached = [];
for (let i = 0; i < runs; i++) cached.push((await call('GET', '/contacts/fields')).ms);
line('cached', cached);
console.log(`totalContacts ${answer.totalContacts}, totalKeys ${answer.totalKeys}, ${answer.data.length - 4} data keys listed`);

if (db) {
  if (!projectId) ({ rows: [{ project_id: projectId }] } = await db.query('SELECT id AS project_id FROM projects WHERE secret_key = $1', [key]));
  const t0 = performance.now();
  const { rows } = await db.query(
    `SELECT k AS key, count(*)::int AS count FROM contacts, jsonb_object_keys(data) AS k WHERE project_id = $1 GROUP BY k`, [projectId]);
  console.log(`exact key counts in SQL: ${Math.round(performance.now() - t0)} ms`);
  const listed = new Map(answer.data.filter((f) => !f.standard).map((f) => [f.key, f]));
  for (const { key: k, count } of rows.sort((a, b) => b.count - a.count)) {
    const exact = Math.round((count * 10_000) / answer.totalContacts) / 100;
    const f = listed.get(k);
    console.log(`  ${k.padEnd(24)} exact ${String(exact).padStart(6)} %  answered ${f ? `${String(f.coverage).padStart(6)} % (${f.type})` : 'not listed'}  diff ${f ? (f.coverage - exact).toFixed(2) : '—'}`);
  }
  await db.end();
}
