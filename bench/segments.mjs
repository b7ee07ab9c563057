// Segments at scale: seeds one project with --contacts contacts and --events events, set-based,
// then times, against a running server (secret key of the seeded project):
//   1. POST /segments/:id/refresh of a 3-filter segment (data filter, event filter, OR group)  target < 1 s
//   2. GET /segments/:id/contacts first page                                                   target < 200 ms
//   3. POST /segments/:id/compute of a tracked segment after ~10% of contacts change membership target < 30 s
//
//   DATA_DIR=/tmp/bench-seg npm start &   # the server under test
//   node bench/segments.mjs --base http://127.0.0.1:8080 [--contacts 1000000] [--events 5000000]
//   node bench/segments.mjs --base … --project <id>   # re-time a project seeded by an earlier run
//   node bench/segments.mjs --base … --project <id> --data-ops   # data.<key> operators, before/after their indexes
//   node bench/segments.mjs --base … --project <id> --time-ops   # the same counts and the 3-filter one, as indexed now (A/B)
//
// Connection URL: --url, else $DATABASE_URL, else $DATA_DIR/postgres.url (default /tmp/bench-seg).
// random() is seeded (setseed), so the data is reproducible. Not a test: numbers depend on the machine.
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { CONTACT_ROW_SQL, SEGMENT_CONDITION } from './lib/bench-audience.mjs';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const dataDir = process.env.DATA_DIR ?? '/tmp/bench-seg';
const url = arg('url', process.env.DATABASE_URL) ?? readFileSync(path.join(dataDir, 'postgres.url'), 'utf8').trim();
const base = arg('base', process.env.BASE_URL ?? 'http://127.0.0.1:8080');
const nContacts = Number(arg('contacts', '1000000'));
const nEvents = Number(arg('events', '5000000'));
const chunk = 200_000;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const key = (prefix) => prefix + Array.from({ length: 40 }, () => BASE62[randomInt(62)]).join('');
const EVENTS = ['page_view', 'login', 'purchase', 'signup', 'add_to_cart', 'search', 'logout', 'share'];

const db = new pg.Client({ connectionString: url, application_name: 'bench-segments' });
await db.connect();
let projectId = arg('project');
let secret;
if (projectId) {
  ({ rows: [{ secret_key: secret }] } = await db.query('SELECT secret_key FROM projects WHERE id = $1', [projectId]));
  console.log(`project ${projectId} (seeded earlier)`);
} else {
  secret = key('sk_');
  const { rows: [project] } = await db.query('INSERT INTO projects (name, public_key, secret_key) VALUES ($1, $2, $3) RETURNING id',
    [`bench segments ${nContacts}`, key('pk_'), secret]);
  projectId = project.id;
  console.log(`project ${projectId}`);
  await seed();
}

async function seed() {
  await db.query('SELECT setseed(0.42)');
  let t0 = performance.now();
  for (let from = 0; from < nContacts; from += chunk) {
    const to = Math.min(nContacts, from + chunk) - 1;
    await db.query(`
      INSERT INTO contacts (project_id, email, subscribed, data, created_at, updated_at)
      ${CONTACT_ROW_SQL}
      FROM generate_series($2::int, $3::int) AS i`, [projectId, from, to]);
  }
  console.log(`contacts: ${Math.round(performance.now() - t0)} ms`);
  t0 = performance.now();
  await db.query(`CREATE TEMP TABLE ids AS SELECT row_number() OVER () AS n, id FROM contacts WHERE project_id = $1`, [projectId]);
  await db.query('CREATE INDEX ON ids (n)');
  for (let from = 0; from < nEvents; from += chunk) {
    const to = Math.min(nEvents, from + chunk) - 1;
    // Skewed: low-numbered contacts are more active; names weighted towards page_view.
    await db.query(`
      INSERT INTO events (project_id, contact_id, name, created_at)
      SELECT $1, ids.id, g.name, g.at
      FROM (SELECT 1 + floor(power(random(), 1.5) * $5)::bigint AS n,
                   ($4::text[])[1 + floor(power(random(), 2) * 8)::int] AS name,
                   now() - random() * interval '180 days' AS at
            FROM generate_series($2::int, $3::int)) AS g
      JOIN ids ON ids.n = g.n`, [projectId, from, to, EVENTS, nContacts]);
  }
  console.log(`events: ${Math.round(performance.now() - t0)} ms`);
  await db.query('VACUUM (ANALYZE) contacts, events');
}

async function call(method, url, body) {
  const started = performance.now();
  const res = await globalThis.fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body && { 'content-type': 'application/json' }) },
    body: body && JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
  return { ms: Math.round(performance.now() - started), json };
}
const sleep = (ms) => new Promise((r) => globalThis.setTimeout(r, ms));
const timed = async (label, n, fn) => {
  const ms = [];
  let last;
  for (let i = 0; i < n; i++) { const r = await fn(); ms.push(r.ms); last = r.json; }
  ms.sort((a, b) => a - b);
  console.log(`${label}: median ${ms[Math.floor(ms.length / 2)]} ms, min ${ms[0]}, max ${ms.at(-1)}`);
  return last;
};
// data.<key> operators (issue 15): POST /segments/count of one filter each, before and after the
// project's data key indexes exist (docs/conditions.md "Data key indexes"): a segment filtering on
// those keys queues their build; the bench waits until the catalogue says ready.
const DATA_OPS = [
  { field: 'data.company', operator: 'exists' },
  { field: 'data.company', operator: 'notExists' },
  { field: 'data.company', operator: 'contains', value: 'company 96' },
  { field: 'data.age', operator: 'greaterThan', value: 40 },
  { field: 'data.age', operator: 'lessThan', value: 20 },
  { field: 'data.score', operator: 'greaterThan', value: 90 },
  { field: 'data.score', operator: 'lessThanOrEqual', value: '10.5' },
];
// Other families, timed by --time-ops too: a count-planning change must not slow them.
const OTHER_OPS = [
  { field: 'createdAt', operator: 'within', value: 30, unit: 'days' },
  { field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' },
  { field: 'event.signup', operator: 'notTriggered' },
  { field: 'email', operator: 'contains', value: 'user4242' },
  { field: 'data.plan', operator: 'equals', value: 'enterprise' },
];
async function timeDataOps(label, ops = DATA_OPS) {
  for (const f of ops) {
    const body = { condition: { logic: 'AND', groups: [{ filters: [f] }] } };
    const last = await timed(`  ${label} ${f.field} ${f.operator} ${f.value ?? ''}`.trimEnd(), 5, () => call('POST', '/segments/count', body));
    console.log(`    count ${last.count}; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  }
}
// --time-ops: the same counts, plus the 3-filter condition's, against --base as the project is now
// (no index built or dropped): run it alternately against two servers on the same database for an A/B.
if (process.argv.includes('--time-ops')) {
  const { rows: ready } = await db.query('SELECT key, kind FROM contact_data_indexes WHERE project_id = $1 AND ready ORDER BY key, kind', [projectId]);
  console.log(`data key indexes ready: ${ready.map((r) => `${r.key}/${r.kind}`).join(', ') || 'none'}`);
  await timeDataOps('');
  await timeDataOps('', OTHER_OPS);
  const last = await timed('  3-filter condition (the members page total)', 5, () => call('POST', '/segments/count', { condition: SEGMENT_CONDITION }));
  console.log(`    count ${last.count}; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  await db.end();
  process.exit(0);
}
if (process.argv.includes('--data-ops')) {
  const { rows: before } = await db.query('SELECT count(*)::int AS n FROM contact_data_indexes WHERE project_id = $1 AND ready', [projectId]);
  console.log(`data key indexes ready before: ${before[0].n}`);
  await timeDataOps('now:');
  const seg = await call('POST', '/segments', { name: 'Bench data ops', condition: { logic: 'OR', groups: DATA_OPS.filter((f) => f.operator !== 'notExists').map((f) => ({ filters: [f] })) } });
  const t0 = performance.now();
  for (let ready = 0; ready < 4 && performance.now() - t0 < 300_000; await sleep(1000)) {
    ({ rows: [{ n: ready }] } = await db.query('SELECT count(*)::int AS n FROM contact_data_indexes WHERE project_id = $1 AND ready', [projectId]));
  }
  console.log(`indexes ready ${Math.round(performance.now() - t0)} ms after the segment was created`);
  await timeDataOps('indexed:');
  await globalThis.fetch(`${base}/segments/${seg.json.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${secret}` } });
  await db.end();
  process.exit(0);
}
const created = await call('POST', '/segments', { name: 'Bench 3 filters', condition: SEGMENT_CONDITION });
const seg = created.json;
console.log(`create (counts at once): ${created.ms} ms, memberCount ${seg.memberCount}`);
const afterCreate = await call('GET', `/segments/${seg.id}/contacts?pageSize=50`);
console.log(`members first page right after create: ${afterCreate.ms} ms, total ${afterCreate.json.total}`);
const refreshed = await timed('refresh (count) 3-filter segment', 5, () => call('POST', `/segments/${seg.id}/refresh`));
console.log(`  memberCount ${refreshed.memberCount}`);
// The page's total (docs/conditions.md, "Members page total"): a count younger than a minute is
// reused; an older one answers if the live count is slow (which then replaces it); with no count
// of the current condition the page waits for the live count. Time the three.
await timed('members first page (pageSize 50), last count an hour old', 5, async () => {
  await sleep(1000); // the previous run's background count has landed
  await db.query(`UPDATE segments SET counted_at = now() - interval '1 hour', condition_changed_at = now() - interval '2 hours' WHERE id = $1`, [seg.id]);
  return call('GET', `/segments/${seg.id}/contacts?pageSize=50`);
});
await sleep(1000);
await timed('members first page (pageSize 50), no count of this condition: waits for the live count', 5, async () => {
  await db.query('UPDATE segments SET counted_at = NULL WHERE id = $1', [seg.id]);
  return call('GET', `/segments/${seg.id}/contacts?pageSize=50`);
});
await call('POST', `/segments/${seg.id}/refresh`);
await timed('members first page (pageSize 50), total counted < 1 min ago', 5, () => call('GET', `/segments/${seg.id}/contacts?pageSize=50`));

// Tracked: plan = pro (30%). First compute enters everyone; then ~10% of contacts change membership.
const tracked = (await call('POST', '/segments', { name: 'Bench tracked', trackMembership: true,
  condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] } })).json;
const first = await call('POST', `/segments/${tracked.id}/compute`);
console.log(`compute (initial, all enter): ${first.ms} ms ${JSON.stringify(first.json)}`);
// 5% of contacts become pro (1/12 of the 60% free: join), 5% stop being pro (1/6 of the 30% pro: leave);
// disjoint hash ranges, so the second update never undoes the first; salted per run, so a re-run
// on the same project (--project) changes other contacts.
const salt = String(Date.now());
const joined = await db.query(`UPDATE contacts SET data = data || '{"plan":"pro"}' WHERE project_id = $1 AND data @> '{"plan":"free"}' AND (hashtext(id::text || $2) & 1023) < 85`, [projectId, salt]);
const left = await db.query(`UPDATE contacts SET data = data || '{"plan":"free"}' WHERE project_id = $1 AND data @> '{"plan":"pro"}' AND (hashtext(id::text || $2) & 1023) >= 853`, [projectId, salt]);
console.log(`changed: ${joined.rowCount} join, ${left.rowCount} leave`);
await db.query('VACUUM (ANALYZE) contacts');
const second = await call('POST', `/segments/${tracked.id}/compute`);
console.log(`compute (~10% change): ${second.ms} ms ${JSON.stringify(second.json)}`);
const third = await call('POST', `/segments/${tracked.id}/compute`);
console.log(`compute (no change): ${third.ms} ms ${JSON.stringify(third.json)}`);
await db.end();
