// Project reset at scale (issue 11 point 5): one project with --contacts contacts and --events
// events (plus templates, segments with members, a campaign with emails, a workflow with
// executions, a bulk job), reset with POST /users/@me/projects/:id/reset while another project is
// tracked with POST /v1/track at a steady pace. Measured from the outside, against `npm start`:
//   - the reset's wall time (target < 60 s at 1,000,000 contacts and 5,000,000 events)
//   - /v1/track of the other project before and during the reset (throughput, p50/p99), while
//     the reset project's own site keeps tracking too (--self-rate, default 50/s)
//   - what is left of the reset project afterwards (every count 0; keys, members, domains kept)
//
//   DATA_DIR=/tmp/bench-reset RATE_LIMIT_PER_MINUTE=1000000 npm start &   # the server under test (PORT 8080)
//   node bench/project-reset.mjs [--base http://127.0.0.1:8080] [--contacts 1000000] [--events 5000000]
//   node bench/project-reset.mjs --seed-only   # seed and print the project, no reset
//   node bench/project-reset.mjs --project <id> # reset a project seeded by an earlier --seed-only run
//
// Connection URL: --url, else $DATABASE_URL, else $DATA_DIR/postgres.url (default /tmp/bench-reset).
// The project is created through the API (signup + POST /users/@me/projects) so the reset runs as
// its OWNER; the rows are seeded set-based straight into the database, then VACUUM (ANALYZE).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const dataDir = process.env.DATA_DIR ?? '/tmp/bench-reset';
const url = arg('url', process.env.DATABASE_URL) ?? readFileSync(path.join(dataDir, 'postgres.url'), 'utf8').trim();
const base = arg('base', process.env.BASE_URL ?? 'http://127.0.0.1:8080');
const nContacts = Number(arg('contacts', '1000000'));
const nEvents = Number(arg('events', '5000000'));
const trackRate = Number(arg('track-rate', '200')); // requests per second to the other project
const selfRate = Number(arg('self-rate', '50')); // requests per second to the reset project during its reset
const chunk = 200_000;
const fetch = globalThis.fetch;

const db = new pg.Client({ connectionString: url, application_name: 'bench-project-reset' });
await db.connect();

async function api(method, p, { cookie, key, body, expect = 200 } = {}) {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { ...(body && { 'content-type': 'application/json' }), ...(cookie && { cookie }), ...(key && { authorization: `Bearer ${key}` }) },
    body: body && JSON.stringify(body),
  });
  if (res.status !== expect) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return { res, json: res.status === 204 ? undefined : await res.json() };
}

async function newOwner(name) {
  const { res } = await api('POST', '/auth/signup', { body: { email: `bench-reset-${Date.now()}-${name.replace(/\W/g, "-")}@example.com`, password: 'bench password 123' }, expect: 201 });
  const cookie = res.headers.get('set-cookie').split(';')[0];
  const { json: project } = await api('POST', '/users/@me/projects', { cookie, body: { name }, expect: 201 });
  return { cookie, project };
}

async function seed(projectId) {
  let t0 = performance.now();
  await db.query('SELECT setseed(0.42)');
  for (let from = 0; from < nContacts; from += chunk) {
    const to = Math.min(nContacts, from + chunk) - 1;
    await db.query(`
      INSERT INTO contacts (project_id, email, subscribed, data)
      SELECT $1, 'user' || i || '@bench' || (i % 5000) || '.example', random() < 0.9,
        jsonb_build_object('plan', (ARRAY['free','pro','enterprise'])[1 + i % 3], 'age', 18 + i % 60)
      FROM generate_series($2::int, $3::int) AS i`, [projectId, from, to]);
  }
  console.log(`seed contacts: ${Math.round(performance.now() - t0)} ms`);
  t0 = performance.now();
  await db.query('CREATE TEMP TABLE ids AS SELECT row_number() OVER () AS n, id FROM contacts WHERE project_id = $1', [projectId]);
  await db.query('CREATE INDEX ON ids (n)');
  for (let from = 0; from < nEvents; from += chunk) {
    const to = Math.min(nEvents, from + chunk) - 1;
    await db.query(`
      INSERT INTO events (project_id, contact_id, name, created_at)
      SELECT $1, ids.id, (ARRAY['page_view','login','purchase','signup'])[1 + g.i % 4], now() - (g.i % 180) * interval '1 day'
      FROM generate_series($2::int, $3::int) AS g(i) JOIN ids ON ids.n = 1 + g.i % $4`, [projectId, from, to, nContacts]);
  }
  console.log(`seed events: ${Math.round(performance.now() - t0)} ms`);
  // The other kinds of rows, a few of each, so every table of the reset has work.
  const { rows: [tpl] } = await db.query(`INSERT INTO templates (project_id, name, subject, body, from_email) VALUES ($1, 'bench', 's', 'b', 'a@bench.example') RETURNING id`, [projectId]);
  const { rows: [seg] } = await db.query(`INSERT INTO segments (project_id, name, type) VALUES ($1, 'bench', 'STATIC') RETURNING id`, [projectId]);
  await db.query('INSERT INTO segment_members (segment_id, project_id, contact_id) SELECT $1, $2, id FROM ids WHERE n <= 100000', [seg.id, projectId]);
  const { rows: [camp] } = await db.query(`INSERT INTO campaigns (project_id, name, subject, body, from_email, audience_type, segment_id, status) VALUES ($1, 'bench', 's', 'b', 'a@bench.example', 'SEGMENT', $2, 'SENT') RETURNING id`, [projectId, seg.id]);
  await db.query(`
    INSERT INTO emails (project_id, contact_id, campaign_id, template_id, source, type, status, to_email, from_email, subject, html, message_id)
    SELECT $1, ids.id, $2, $3, 'CAMPAIGN', 'MARKETING', 'SENT', 'user' || n || '@x.example', 'a@bench.example', 's', 'b', '<' || gen_random_uuid() || '@bench.example>'
    FROM ids WHERE n <= 100000`, [projectId, camp.id, tpl.id]);
  await db.query(`INSERT INTO jobs (project_id, kind, status) VALUES ($1, 'import', 'COMPLETED')`, [projectId]);
  await db.query('VACUUM (ANALYZE) contacts, events, emails, segment_members');
  console.log(`seeded ${nContacts} contacts, ${nEvents} events, 100,000 campaign emails and segment members`);
}

/** Tracks the other project at `trackRate` requests/s until `stop()`; latencies of the answers. */
function trackLoad(key, rate = trackRate) {
  const lat = [];
  const errors = {};
  let running = true;
  const started = performance.now();
  const loop = (async () => {
    let i = 0;
    const inflight = new Set();
    while (running) {
      const due = started + (i * 1000) / rate;
      const now = performance.now();
      if (due > now) await sleep(due - now);
      const t0 = performance.now();
      const p = api('POST', '/v1/track', { key, body: { email: `other${i % 5000}@bench.example`, event: 'page_view' } })
        .then(() => lat.push(performance.now() - t0), (e) => { const k = String(e.message).split(': ')[1]?.slice(0, 3) ?? 'error'; errors[k] = (errors[k] ?? 0) + 1; })
        .finally(() => inflight.delete(p));
      inflight.add(p);
      i++;
    }
    await Promise.all(inflight);
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const secs = (performance.now() - started) / 1000;
      const s = [...lat].sort((a, b) => a - b);
      const q = (x) => Math.round(s[Math.min(s.length - 1, Math.floor(x * s.length))] ?? 0);
      return { ok: s.length, errors, perSecond: Math.round(s.length / secs), p50: q(0.5), p99: q(0.99), max: Math.round(s.at(-1) ?? 0) };
    },
  };
}

const counts = async (projectId) => (await db.query(`
  SELECT (SELECT count(*) FROM contacts WHERE project_id = $1)::int AS contacts,
         (SELECT count(*) FROM events WHERE project_id = $1)::int AS events,
         (SELECT count(*) FROM emails WHERE project_id = $1)::int AS emails,
         (SELECT count(*) FROM segments WHERE project_id = $1)::int AS segments,
         (SELECT count(*) FROM campaigns WHERE project_id = $1)::int AS campaigns,
         (SELECT count(*) FROM templates WHERE project_id = $1)::int AS templates,
         (SELECT count(*) FROM jobs WHERE project_id = $1)::int AS jobs,
         (SELECT count(*) FROM memberships WHERE project_id = $1)::int AS members,
         (SELECT count(*) FROM projects WHERE id = $1)::int AS project`, [projectId])).rows[0];

/** The OWNER of a project seeded by an earlier `--seed-only` run, signed in again. */
async function existingOwner(projectId) {
  const { rows: [owner] } = await db.query(`SELECT u.email FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.project_id = $1 AND m.role = 'OWNER'`, [projectId]);
  const { res } = await api('POST', '/auth/login', { body: { email: owner.email, password: 'bench password 123' } });
  const cookie = res.headers.get('set-cookie').split(';')[0];
  return { cookie, project: (await api('GET', `/users/@me/projects/${projectId}`, { cookie })).json };
}

const big = arg('project') ? await existingOwner(arg('project')) : await newOwner('bench reset');
const other = await newOwner('bench other');
console.log(`project ${big.project.id} (reset), ${other.project.id} (tracked meanwhile)`);
if (!arg('project')) await seed(big.project.id);
if (process.argv.includes('--seed-only')) process.exit(0);
const before = await counts(big.project.id);
console.log(`the reset project before: ${JSON.stringify(before)}`);

// Warm up, then the other project's baseline.
let load = trackLoad(other.project.public);
await sleep(3000);
await load.stop();
load = trackLoad(other.project.public);
await sleep(10_000);
const baseline = await load.stop();
console.log(`track of the other project, baseline 10 s: ${JSON.stringify(baseline)}`);

// During the reset the reset project's own site keeps tracking too: its requests wait for the
// reset's lock, and must not take the other project down with them.
load = trackLoad(other.project.public);
const own = trackLoad(big.project.public, selfRate);
await sleep(1000);
const t0 = performance.now();
await api('POST', `/users/@me/projects/${big.project.id}/reset`, { cookie: big.cookie, body: { confirm: big.project.name } });
const resetMs = Math.round(performance.now() - t0);
await sleep(1000);
const during = await load.stop();
const ownDuring = await own.stop();
console.log(`reset: ${resetMs} ms`);
console.log(`track of the other project during the reset (+1 s either side): ${JSON.stringify(during)}`);
console.log(`track of the reset project itself meanwhile (${selfRate}/s): ${JSON.stringify(ownDuring)}`);
console.log(`left of the reset project: ${JSON.stringify(await counts(big.project.id))}`);
const after = await api('GET', `/users/@me/projects/${big.project.id}`, { cookie: big.cookie });
console.log(`keys kept: ${after.json.secret === big.project.secret && after.json.public === big.project.public}`);
await db.end();
