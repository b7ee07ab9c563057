// Scale curve (issue 15, point 5): the same three measurements at 10k, 1M and 10M contacts of one
// project. Not a test: numbers depend on the machine and on what else runs on it. Usage and the
// last results: bench/scale.md.
//
//   node --import tsx bench/scale.mjs --contacts 1000000 [--events-per-contact 5] [--dir /root/scale-data/1m]
//   node --import tsx bench/scale.mjs --contacts 1000000 --reuse     # measure again, no seeding
//   node --import tsx bench/scale.mjs --contacts 1000000 --seed-only  # seed, measure later with --reuse
//   … --only track,deliver,segments --duration 20 --emails 5000
//
// Seeding (bench/lib/scale-seed.mjs): the server (`scripts/start.mjs`, as `npm start`, ROLE=api)
// starts on an empty DATA_DIR and migrates; a project is created through the API and given a
// verified sender domain; contacts and events are inserted set-based; a segment with the 3-filter
// condition of bench/segments.mjs is kept, and at ≥ 50,000 contacts a worker runs until the data
// key index it asks for is built (as a project with that segment has it). Seconds of every step
// go to <dir>/scale.json, which --reuse reads.
//
// Measured from this process against the server, in this order, with the load average and the CPU
// seconds of the server's Node process and of its PostgreSQL processes (from /proc) per operation:
//  (a) track: autocannon, --connections 50, warm-up 5 s, --duration s of POST /v1/track, half the
//      calls to an existing contact drawn at random from all N, half to a new contact; the
//      contacts and events it created are deleted afterwards, so a re-run finds N again.
//  (b) delivery: --emails emails queued through POST /v1/send (50 existing contacts per request,
//      the worker stopped), then a ROLE=worker process starts; emails/s from its `ready` line
//      until every email is final, counting the messages that reached the SMTP sink (this
//      process, as bench/send.mjs --skip-accept).
//  (c) segments: POST /segments of the 3-filter segment (it counts at once), then
//      POST /segments/:id/refresh 5 times: median, min, max; the segment is deleted afterwards.
import { execFileSync, spawn } from 'node:child_process';
import console from 'node:console';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { startSmtpSink } from '../test/helpers/smtp-sink.ts';
import { SEGMENT_CONDITION } from './lib/bench-audience.mjs';
import { addVerifiedDomain, createProject, json, SECRET } from './lib/harness.mjs';
import { cpuSeconds, freePort, loadAverage, postgresCpuBelow } from './lib/proc.mjs';
import { seededEmail, seedProject } from './lib/scale-seed.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const flag = (name) => process.argv.includes(`--${name}`);
const contacts = Number(arg('contacts', '10000'));
const sizeName = contacts >= 1e6 && contacts % 1e6 === 0 ? `${contacts / 1e6}m` : contacts >= 1e3 && contacts % 1e3 === 0 ? `${contacts / 1e3}k` : String(contacts);
const opts = {
  contacts,
  eventsPerContact: Number(arg('events-per-contact', '5')),
  dir: arg('dir', `/root/scale-data/${sizeName}`),
  reuse: flag('reuse'),
  seedOnly: flag('seed-only'),
  only: arg('only', 'track,deliver,segments').split(','),
  connections: Number(arg('connections', '50')),
  duration: Number(arg('duration', '20')),
  warmup: Number(arg('warmup', '5')),
  emails: Number(arg('emails', '5000')),
  refreshes: Number(arg('refreshes', '5')),
};
const fetch = globalThis.fetch;
const DOMAIN = 'bench-sender.example';
const BODY = `<html><body><table><tr><td><h1>Hello {{name ?? there}}</h1><p>Your order <b>{{order}}</b> is confirmed.
<a href="https://shop.example/orders/{{order}}">View your order</a></p><p>Thanks for shopping with us.</p></td></tr></table></body></html>`;
const metaFile = path.join(opts.dir, 'scale.json');
const log = (line) => console.log(`${line}  [load ${loadAverage()}]`);

/** The server as `npm start` runs it (compiled dist/), ROLE from `env`; resolves once it logs `readyPattern`. */
async function startServer(env, readyPattern) {
  const child = spawn(process.execPath, ['--max-semi-space-size=4', 'scripts/start.mjs'], { cwd: process.cwd(), env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (out = (out + c).slice(-200_000)));
  const t0 = performance.now();
  const deadline = Date.now() + 600_000; // a 10M-contact cluster may replay WAL at start
  while (!readyPattern.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}\n${out.slice(-5000)}`);
    if (Date.now() > deadline) throw new Error(`server not ready within 600 s\n${out.slice(-5000)}`);
    await sleep(50);
  }
  return {
    pid: child.pid,
    startSeconds: (performance.now() - t0) / 1000,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      // An unref'd timer: once the server has exited, nothing keeps this process waiting.
      await Promise.race([exited, sleep(120_000, undefined, { ref: false })]);
    },
  };
}

/** CPU seconds so far of the API's Node process and of its PostgreSQL (postmaster, reaped children, backends). */
const cpuOf = (api) => ({ node: cpuSeconds(api.pid), pg: postgresCpuBelow(api.pid) });
const ms = (s) => `${(s * 1000).toFixed(3)} ms`;

async function call(base, secret, method, url, body) {
  const t0 = performance.now();
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${secret}`, ...(body && { 'content-type': 'application/json' }) },
    body: body && JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return { ms: performance.now() - t0, json: text ? JSON.parse(text) : undefined };
}

/** Waits until the project's data key indexes are all built (a worker process runs meanwhile). */
async function buildDataIndexes(ctx) {
  const worker = await startServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/);
  const t0 = performance.now();
  try {
    for (;;) {
      const { rows: [r] } = await ctx.db.query(`SELECT count(*)::int AS n, count(*) FILTER (WHERE ready)::int AS ready FROM contact_data_indexes WHERE project_id = $1`, [ctx.meta.projectId]);
      if (r.n > 0 && r.ready === r.n) return { indexes: r.n, seconds: (performance.now() - t0) / 1000 };
      if (performance.now() - t0 > 1_800_000) throw new Error(`data key indexes not ready after 30 min: ${JSON.stringify(r)}`);
      await sleep(1000);
    }
  } finally {
    await worker.stop();
  }
}

async function seed(ctx) {
  const t0 = performance.now();
  const project = await createProject(ctx.base);
  await addVerifiedDomain(ctx.db, project.id, DOMAIN);
  const meta = { contacts: opts.contacts, eventsPerContact: opts.eventsPerContact, projectId: project.id, secret: project.secret, publicKey: project.public, seededAt: new Date().toISOString(), load: {} };
  ctx.meta = meta;
  meta.load.before = loadAverage();
  meta.seconds = await seedProject(ctx.db, { projectId: project.id, contacts: opts.contacts, eventsPerContact: opts.eventsPerContact });
  const { rows: [counts] } = await ctx.db.query(`SELECT (SELECT count(*) FROM contacts WHERE project_id = $1)::int AS contacts, (SELECT count(*) FROM events WHERE project_id = $1)::int AS events`, [project.id]);
  Object.assign(meta, { seededContacts: counts.contacts, seededEvents: counts.events });
  // The project's standing segment: its data key index (data.age > 40) is built as in production.
  await call(ctx.base, project.secret, 'POST', '/segments', { name: 'Scale standing 3 filters', condition: SEGMENT_CONDITION });
  if (opts.contacts >= 50_000) {
    const built = await buildDataIndexes(ctx);
    meta.seconds['data key indexes'] = built.seconds;
    console.log(`  seed data key indexes (${built.indexes}, built by the worker): ${built.seconds.toFixed(1)} s`);
  }
  meta.seconds.total = (performance.now() - t0) / 1000;
  meta.load.after = loadAverage();
  const { rows: [size] } = await ctx.db.query(`SELECT pg_database_size(current_database()) AS bytes`);
  meta.databaseBytes = Number(size.bytes);
  writeFileSync(metaFile, `${JSON.stringify(meta, null, 2)}\n`);
  log(`seeded ${counts.contacts.toLocaleString('en')} contacts and ${counts.events.toLocaleString('en')} events in ${meta.seconds.total.toFixed(1)} s; database ${(meta.databaseBytes / 2 ** 30).toFixed(2)} GiB`);
}

async function trackPhase(ctx) {
  const { publicKey: key, projectId } = ctx.meta;
  const runId = Date.now().toString(36);
  let n = 0;
  let fresh = 0;
  const run = (seconds) => autocannon({
    url: ctx.base,
    connections: opts.connections,
    duration: seconds,
    requests: [{
      method: 'POST',
      path: '/v1/track',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      setupRequest: (req) => {
        const i = n++;
        // Even calls: an existing contact drawn from all N (cold rows at 10M); odd: a new contact.
        const email = i % 2 === 0 ? seededEmail(Math.floor(Math.random() * opts.contacts)) : `new-${runId}-${fresh++}@scale.example`;
        return { ...req, body: JSON.stringify({ email, event: 'page_view', data: { visits: i, source: 'scale' } }) };
      },
    }],
  });
  const startedAt = new Date(Date.now() - 1000);
  console.log(`\n(a) POST /v1/track: ${opts.connections} connections, warm-up ${opts.warmup} s, then ${opts.duration} s; half existing contacts of ${opts.contacts.toLocaleString('en')}, half new`);
  if (opts.warmup > 0) await run(opts.warmup);
  const load0 = loadAverage();
  const cpu0 = cpuOf(ctx.api);
  const r = await run(opts.duration);
  const cpu1 = cpuOf(ctx.api);
  const load1 = loadAverage();
  const total = r['2xx'] + r.non2xx;
  const node = cpu1.node - cpu0.node;
  const pgCpu = cpu1.pg - cpu0.pg;
  const result = {
    reqPerSec: r['2xx'] / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors,
    nodeMsPerReq: (node / total) * 1000, pgMsPerReq: (pgCpu / total) * 1000, load: [load0, load1],
  };
  console.log(`    requests        ${total} in ${r.duration.toFixed(1)} s: ${result.reqPerSec.toFixed(0)} 2xx/s (non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts})
    latency (ms)    p50 ${r.latency.p50}  p90 ${r.latency.p90}  p99 ${r.latency.p99}  max ${r.latency.max}
    CPU             server node ${node.toFixed(1)} s (${ms(node / total)} per request)  postgres ${pgCpu.toFixed(1)} s (${ms(pgCpu / total)} per request)
    load            ${load0} → ${load1}`);
  // Back to N contacts: the new contacts (by email, unique index) and every event since the start.
  await sleep(1000);
  const emails = Array.from({ length: fresh }, (_, i) => `new-${runId}-${i}@scale.example`);
  const t0 = performance.now();
  const ev = await ctx.db.query('DELETE FROM events WHERE project_id = $1 AND created_at >= $2', [projectId, startedAt]);
  let removed = 0;
  for (let i = 0; i < emails.length; i += 10_000) {
    removed += (await ctx.db.query('DELETE FROM contacts WHERE project_id = $1 AND email = ANY($2::text[])', [projectId, emails.slice(i, i + 10_000)])).rowCount;
  }
  console.log(`    cleanup         ${ev.rowCount} events and ${removed} new contacts deleted (${Math.round(performance.now() - t0)} ms)`);
  return result;
}

async function deliveryPhase(ctx) {
  const { secret, projectId } = ctx.meta;
  const from = `orders@${DOMAIN}`;
  // Distinct existing contacts, spread over all N.
  const stride = Math.max(1, Math.floor(opts.contacts / opts.emails));
  const offset = Math.floor(Math.random() * stride);
  const recipients = Array.from({ length: Math.min(opts.emails, opts.contacts) }, (_, k) => seededEmail((offset + k * stride) % opts.contacts));
  console.log(`\n(b) delivery: queueing ${recipients.length} emails to existing contacts (50 per POST /v1/send), the worker stopped`);
  const t0 = performance.now();
  let next = 0;
  const client = async () => {
    while (next < recipients.length) {
      const first = next;
      next = Math.min(recipients.length, next + 50);
      const res = await fetch(`${ctx.base}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: recipients.slice(first, next), from, subject: 'Order {{order}} confirmed', body: BODY, data: { name: 'Bench', order: { value: `o-${first}`, persistent: false } } }),
      });
      await json(res, 200);
    }
  };
  await Promise.all(Array.from({ length: 4 }, client));
  const enqueueSeconds = (performance.now() - t0) / 1000;
  const { rows: ids } = await ctx.db.query(`SELECT message_id FROM emails WHERE project_id = $1 AND status = 'PENDING'`, [projectId]);
  console.log(`    accepted ${ids.length} in ${enqueueSeconds.toFixed(1)} s (${(ids.length / enqueueSeconds).toFixed(0)}/s); starting the worker…`);
  const pg0 = postgresCpuBelow(ctx.api.pid);
  const load0 = loadAverage();
  const worker = await startServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/);
  const started = performance.now();
  const workerCpu0 = cpuSeconds(worker.pid); // its start-up is not delivery
  const expected = new Set(ids.map((r) => r.message_id));
  const arrived = () => ctx.sink.messages.filter((m) => expected.has(m.messageId)).length;
  // Every 250 ms the sink (this process); every 2 s the rows, in case an email fails instead.
  for (let i = 0; ; i++) {
    if (arrived() >= expected.size) break;
    if (i % 8 === 7) {
      const { rows: [r] } = await ctx.db.query(`SELECT count(*)::int AS open FROM emails WHERE project_id = $1 AND status IN ('PENDING', 'SENDING')`, [projectId]);
      if (r.open === 0) break;
    }
    if (performance.now() - started > 600_000) break;
    await sleep(250);
  }
  const seconds = (performance.now() - started) / 1000;
  const workerCpu = cpuSeconds(worker.pid) - workerCpu0;
  const pgCpu = postgresCpuBelow(ctx.api.pid) - pg0;
  const load1 = loadAverage();
  await worker.stop();
  const received = ctx.sink.messages.filter((m) => expected.has(m.messageId));
  const distinct = new Set(received.map((m) => m.messageId)).size;
  const delivered = distinct;
  const result = { emailsPerSec: delivered / seconds, delivered, queued: ids.length, duplicates: received.length - distinct, workerMsPerEmail: (workerCpu / delivered) * 1000, pgMsPerEmail: (pgCpu / delivered) * 1000, load: [load0, load1] };
  console.log(`    delivered       ${delivered} of ${ids.length} at the sink in ${seconds.toFixed(1)} s from worker ready: ${result.emailsPerSec.toFixed(0)} emails/s; ${result.duplicates} duplicates (arrived ${arrived()})
    CPU             worker node ${workerCpu.toFixed(1)} s (${ms(workerCpu / delivered)} per email)  postgres ${pgCpu.toFixed(1)} s (${ms(pgCpu / delivered)} per email)
    load            ${load0} → ${load1}`);
  return result;
}

async function segmentsPhase(ctx) {
  const { secret } = ctx.meta;
  console.log(`\n(c) segments: create the 3-filter segment of bench/segments.mjs, then ${opts.refreshes} × refresh (count)`);
  const { rows: [ix] } = await ctx.db.query(`SELECT count(*) FILTER (WHERE ready)::int AS ready FROM contact_data_indexes WHERE project_id = $1`, [ctx.meta.projectId]);
  const load0 = loadAverage();
  const created = await call(ctx.base, secret, 'POST', '/segments', { name: `Scale ${Date.now()}`, condition: SEGMENT_CONDITION });
  const id = created.json.id;
  // A create slower than its wait (COUNT_ON_WRITE_MS) answers before its count, which goes on in
  // the background: the refreshes start once it has landed, not beside it.
  const waited = performance.now();
  for (;;) {
    const { rows: [seg] } = await ctx.db.query('SELECT counted_at FROM segments WHERE id = $1', [id]);
    if (seg.counted_at !== null || performance.now() - waited > 300_000) break;
    await sleep(100);
  }
  const backgroundMs = performance.now() - waited;
  const times = [];
  const cpu0 = cpuOf(ctx.api);
  let count;
  for (let i = 0; i < opts.refreshes; i++) {
    const r = await call(ctx.base, secret, 'POST', `/segments/${id}/refresh`);
    times.push(r.ms);
    count = r.json.memberCount;
  }
  const cpu1 = cpuOf(ctx.api);
  const load1 = loadAverage();
  await call(ctx.base, secret, 'DELETE', `/segments/${id}`);
  times.sort((a, b) => a - b);
  const result = {
    createMs: created.ms, createCountLandedMs: created.ms + backgroundMs, refreshMedianMs: times[Math.floor(times.length / 2)], refreshMinMs: times[0], refreshMaxMs: times.at(-1), memberCount: count,
    pgMsPerRefresh: ((cpu1.pg - cpu0.pg) / opts.refreshes) * 1000, nodeMsPerRefresh: ((cpu1.node - cpu0.node) / opts.refreshes) * 1000, dataIndexesReady: ix.ready, load: [load0, load1],
  };
  console.log(`    create          ${created.ms.toFixed(0)} ms (memberCount ${created.json.memberCount}; its count landed after ${(created.ms + backgroundMs).toFixed(0)} ms); data key indexes ready: ${ix.ready}
    refresh         median ${result.refreshMedianMs.toFixed(0)} ms, min ${result.refreshMinMs.toFixed(0)}, max ${result.refreshMaxMs.toFixed(0)}; memberCount ${count}
    CPU             postgres ${result.pgMsPerRefresh.toFixed(0)} ms, server node ${result.nodeMsPerRefresh.toFixed(1)} ms per refresh
    load            ${load0} → ${load1}`);
  return result;
}

// The stage: SMTP sink and DNS server in this process, the API server on the dataset's DATA_DIR.
if (opts.reuse && !existsSync(metaFile)) throw new Error(`--reuse: ${metaFile} is missing (seed first)`);
if (!opts.reuse && existsSync(metaFile)) throw new Error(`${opts.dir} is seeded already: pass --reuse, or remove it to seed again`);
mkdirSync(opts.dir, { recursive: true });
const sink = await startSmtpSink({ keepRaw: false });
const dns = await startDnsServer();
const port = await freePort();
const env = {
  ...process.env, DNS_SERVERS: dns.address, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(opts.dir, 'data'),
  LOG_LEVEL: 'info', SECRET, RATE_LIMIT_PER_MINUTE: '10000000', SMTP_URL: sink.url,
};
for (const variable of ['DATABASE_URL', 'ROLE', 'PUBLIC_URL', 'REDIS_URL']) delete env[variable];
const ctx = { env, base: `http://127.0.0.1:${port}`, sink, meta: opts.reuse ? JSON.parse(readFileSync(metaFile, 'utf8')) : undefined };
let api;
try {
  console.log(`scale: ${opts.contacts.toLocaleString('en')} contacts, ${opts.dir}${opts.reuse ? ' (reused)' : ''}; ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm).length} CPUs, node ${process.version}`);
  api = await startServer({ ...env, ROLE: 'api' }, /ready: API/);
  ctx.api = api;
  log(`API ready in ${api.startSeconds.toFixed(1)} s`);
  ctx.databaseUrl = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
  ctx.db = new pg.Client({ connectionString: ctx.databaseUrl, application_name: 'bench-scale' });
  await ctx.db.connect();
  if (!opts.reuse) await seed(ctx);
  const { rows: [{ public_key: dkimKey }] } = await ctx.db.query('SELECT dkim_public_key AS public_key FROM domains WHERE project_id = $1 AND domain = $2', [ctx.meta.projectId, DOMAIN]);
  dns.set(`bench._domainkey.${DOMAIN}`, { TXT: [`v=DKIM1; k=rsa; p=${dkimKey}`] });
  if (!opts.seedOnly) {
    const results = { at: new Date().toISOString(), commit: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(), contacts: opts.contacts, seedSeconds: ctx.meta.seconds?.total };
    if (opts.only.includes('track')) results.track = await trackPhase(ctx);
    if (opts.only.includes('deliver')) results.deliver = await deliveryPhase(ctx);
    if (opts.only.includes('segments')) results.segments = await segmentsPhase(ctx);
    console.log(`\nresult ${JSON.stringify(results)}`);
  }
} finally {
  await ctx.db?.end().catch(() => undefined);
  await api?.stop();
  await sink.close();
  await dns.close();
}
