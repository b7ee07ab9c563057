// Benchmark of sending, not a test: numbers depend on the machine and on what else runs on it.
//
//   node --import tsx bench/send.mjs                          # both phases, defaults below
//   node --import tsx bench/send.mjs --emails 20000 --duration 20 --connections 50
//   node --import tsx bench/send.mjs --skip-accept            # delivery only
//   node --import tsx bench/send.mjs --skip-deliver           # acceptance only
//   node --import tsx bench/send.mjs --e2e [--e2e-emails 5000 --e2e-clients 32]   # (c) only
//   … --pg-stats                       # pg_stat_statements of each phase (restarts PostgreSQL once)
//   … --profile-worker DIR / --profile-api DIR   # V8 CPU profiles of the worker / API process
//
// Starts an SMTP sink (smtp-server, in this process) and the server as `ROLE=api` on a temp
// DATA_DIR (embedded PostgreSQL) with SMTP_URL pointing at the sink, then:
//  (b) delivery: enqueues --emails emails through POST /v1/send (50 recipients per request),
//      starts a `ROLE=worker` process on the same database, and times from its `ready` log line
//      until every email is final; the rate counts the emails that reached the sink (each
//      Message-ID once), not rows marked SENT; then checks for duplicates and misses, and
//      verifies DKIM on a sample with mailauth.
//  (a) acceptance: autocannon against POST /v1/send (one recipient per request, a one-off data
//      value, rendering) with the worker stopped; checks every 2xx left an email row.
//  (c) --e2e: end to end while acceptance runs: the worker running, --e2e-clients clients POST
//      --e2e-emails emails (one recipient each, a 4 KB HTML body) as fast as they are answered;
//      the delivery rate counts from the first POST to the last message at the sink (each
//      recipient once), and the run checks 0 duplicates and 0 missing.
// Prints rates, latencies and the CPU seconds of the server, worker and PostgreSQL processes.
import { Buffer } from 'node:buffer';
import http from 'node:http';
import process from 'node:process';
import { URL } from 'node:url';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { dkimVerify } from 'mailauth';
import { cpuSeconds, json, postgresCpu, spawnServer, withDeliveryBench } from './lib/harness.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const flag = (name) => process.argv.includes(`--${name}`);
const opts = {
  emails: Number(arg('emails', '20000')),
  duration: Number(arg('duration', '20')),
  warmup: Number(arg('warmup', '5')),
  connections: Number(arg('connections', '50')),
  smtpQuery: arg('smtp-query', ''),
  /** Writes a V8 CPU profile of the worker process into this folder. */
  profileWorker: arg('profile-worker', undefined),
  /** Writes a V8 CPU profile of the API process into this folder (at its stop). */
  profileApi: arg('profile-api', undefined),
  accept: !flag('skip-accept') && !flag('e2e'),
  deliver: !flag('skip-deliver') && !flag('e2e'),
  e2e: flag('e2e'),
  /** Restarts the API once with pg_stat_statements and prints the costliest statements of each phase. */
  pgStats: flag('pg-stats'),
  e2eEmails: Number(arg('e2e-emails', '5000')),
  e2eClients: Number(arg('e2e-clients', '32')),
};
const fetch = globalThis.fetch;
const workerNodeArgs = opts.profileWorker ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileWorker}`] : [];

const BODY = `<html><body><table><tr><td><h1>Hello {{name ?? there}}</h1><p>Your order <b>{{order}}</b> is confirmed.
<a href="https://shop.example/orders/{{order}}">View your order</a></p><p>Thanks for shopping with us.</p></td></tr></table></body></html>`;

async function enqueue(base, secret, from, total) {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const first = next;
      next = Math.min(total, next + 50);
      const to = Array.from({ length: next - first }, (_, i) => `user${first + i}@example.com`);
      const res = await fetch(`${base}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to, from, subject: 'Order {{order}} confirmed', body: BODY, data: { name: 'Bench', order: { value: `o-${first}`, persistent: false } } }),
      });
      await json(res, 200);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return (performance.now() - started) / 1000;
}

async function deliveryPhase(ctx) {
  const from = `orders@${ctx.domain}`;
  console.log(`\n(b) delivery: enqueueing ${opts.emails} emails (50 recipients per POST /v1/send)…`);
  const enqueueSeconds = await enqueue(ctx.base, ctx.project.secret, from, opts.emails);
  const { rows: ids } = await ctx.client.query(`SELECT id, message_id FROM emails WHERE project_id = $1 AND status = 'PENDING'`, [ctx.project.id]);
  console.log(`    accepted ${ids.length} emails in ${enqueueSeconds.toFixed(1)} s (${(ids.length / enqueueSeconds).toFixed(0)} emails/s); starting the worker…`);
  await ctx.pgStats?.reset();
  const cpu0 = { pg: postgresCpu(ctx.api.pid), bench: process.cpuUsage() };
  const worker = await spawnServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/, workerNodeArgs);
  const started = performance.now();
  const samples = [];
  // Progress from the sink (in this process); the email rows are counted only every 2 s to see
  // when every email is final (a count every 250 ms took CPU from the pipeline being measured).
  const sinkBefore = ctx.sink.messages.length;
  for (let i = 0; ; i++) {
    samples.push([(performance.now() - started) / 1000, ctx.sink.messages.length - sinkBefore]);
    if (i % 8 === 7 || ctx.sink.messages.length - sinkBefore >= ids.length) {
      const { rows } = await ctx.client.query(`SELECT count(*) FILTER (WHERE status NOT IN ('PENDING','SENDING'))::int AS final FROM emails WHERE project_id = $1`, [ctx.project.id]);
      if (rows[0].final >= ids.length) break;
    }
    if (performance.now() - started > 600_000) break;
    await sleep(250);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = { worker: cpuSeconds(worker.pid), pg: postgresCpu(ctx.api.pid) - cpu0.pg, bench: process.cpuUsage(cpu0.bench) };
  await worker.stop();
  const { rows: [{ sent }] } = await ctx.client.query(`SELECT count(*) FILTER (WHERE status = 'SENT')::int AS sent FROM emails WHERE project_id = $1`, [ctx.project.id]);
  const mid = samples.filter(([, n]) => n >= ids.length * 0.1 && n <= ids.length * 0.9);
  const steady = mid.length > 1 ? (mid.at(-1)[1] - mid[0][1]) / (mid.at(-1)[0] - mid[0][0]) : NaN;

  const received = ctx.sink.messages.filter((m) => m.messageId?.endsWith(`@${ctx.domain}>`));
  const distinct = new Set(received.map((m) => m.messageId));
  const expected = new Set(ids.map((r) => r.message_id));
  const missing = [...expected].filter((m) => !distinct.has(m)).length;
  // The headline counts what a user observes: this run's emails that reached the sink.
  const delivered = expected.size - missing;
  const record = `v=DKIM1; k=rsa; p=${ctx.key.publicKey}`;
  const resolver = async (name) => (name === `bench._domainkey.${ctx.domain}` ? [[record]] : []);
  const sample = received.filter((_, i) => i % Math.max(1, Math.floor(received.length / 20)) === 0).slice(0, 20);
  const verdicts = await Promise.all(sample.map(async (m) => (await dkimVerify(m.raw, { resolver })).results[0]?.status.result));
  console.log(`
    delivered       ${delivered} of ${ids.length} at the sink in ${seconds.toFixed(1)} s from worker ready: ${(delivered / seconds).toFixed(0)} emails/s (steady 10–90%: ${steady.toFixed(0)}/s)
    sink            ${received.length} messages, ${distinct.size} distinct Message-IDs, ${received.length - distinct.size} duplicates, ${missing} missing; rows marked SENT ${sent}
    DKIM (mailauth) ${verdicts.filter((v) => v === 'pass').length}/${verdicts.length} sampled messages pass
    CPU seconds     worker node ${cpu.worker.toFixed(1)} s  postgres ${cpu.pg.toFixed(1)} s  sink+bench ${((cpu.bench.user + cpu.bench.system) / 1e6).toFixed(1)} s`);
  await ctx.pgStats?.print('delivery', { unit: 'email', count: delivered });
}

async function acceptancePhase(ctx) {
  const from = `orders@${ctx.domain}`;
  let n = 0;
  const run = (seconds) =>
    autocannon({
      url: ctx.base,
      connections: opts.connections,
      duration: seconds,
      requests: [
        {
          method: 'POST',
          path: '/v1/send',
          headers: { authorization: `Bearer ${ctx.project.secret}`, 'content-type': 'application/json' },
          setupRequest: (req) => {
            const i = n++;
            const body = { to: `buyer${i % 5000}@example.com`, from, subject: 'Order {{order}} confirmed', body: BODY, data: { name: 'Bench', order: { value: `o-${i}`, persistent: false } } };
            return { ...req, body: JSON.stringify(body) };
          },
        },
      ],
    });
  console.log(`\n(a) acceptance: POST /v1/send, ${opts.connections} connections, warm-up ${opts.warmup} s, then ${opts.duration} s…`);
  if (opts.warmup > 0) await run(opts.warmup);
  // Requests still in flight when a run stops commit a moment later: let them land before counting.
  const settle = () => sleep(1000);
  const count = async () => (await ctx.client.query(`SELECT count(*)::int AS n FROM emails WHERE project_id = $1`, [ctx.project.id])).rows[0].n;
  await settle();
  const before = await count();
  await ctx.pgStats?.reset();
  const cpu0 = { api: cpuSeconds(ctx.api.pid), pg: postgresCpu(ctx.api.pid), bench: process.cpuUsage() };
  const r = await run(opts.duration);
  const cpu = { api: cpuSeconds(ctx.api.pid) - cpu0.api, pg: postgresCpu(ctx.api.pid) - cpu0.pg, bench: process.cpuUsage(cpu0.bench) };
  await settle();
  const rows = (await count()) - before;
  const pct = (s) => `${((s / r.duration) * 100).toFixed(0)}%`;
  console.log(`
    requests        ${r['2xx'] + r.non2xx} in ${r.duration.toFixed(1)} s: ${(r['2xx'] / r.duration).toFixed(0)} accepted/s (non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts})
    latency (ms)    p50 ${r.latency.p50}  p90 ${r.latency.p90}  p99 ${r.latency.p99}  max ${r.latency.max}
    email rows      ${rows} new for ${r['2xx']} answers 2xx${rows >= r['2xx'] && rows - r['2xx'] <= opts.connections ? ` (every accepted email stored; ${rows - r['2xx']} more from requests still in flight when the run ended)` : ' (MISMATCH: an accepted email is missing)'}
    CPU seconds     api node ${cpu.api.toFixed(1)} s (${pct(cpu.api)} of a core)  postgres ${cpu.pg.toFixed(1)} s (${pct(cpu.pg)})  autocannon ${((cpu.bench.user + cpu.bench.system) / 1e6).toFixed(1)} s`);
  await ctx.pgStats?.print('acceptance', { unit: 'email', count: rows });
}

/** A ~4 KB HTML body: BODY and paragraphs of an order summary. */
const BODY_4KB = BODY.replace(
  '</td>',
  `${Array.from({ length: 33 }, (_, i) => `<p style="margin:0 0 8px">Item ${i + 1}: {{name ?? there}}, a line of your order summary with its price and quantity.</p>`).join('\n')}</td>`,
);

/** POSTs a body on the agent's sockets; resolves with the status once the answer is read. */
function post(agent, url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function endToEndPhase(ctx) {
  const from = `orders@${ctx.domain}`;
  const total = opts.e2eEmails;
  console.log(`\n(c) end to end: ${total} × POST /v1/send (one recipient, ${BODY_4KB.length} B HTML) by ${opts.e2eClients} clients, the worker running…`);
  const worker = await spawnServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/, workerNodeArgs);
  await ctx.pgStats?.reset();
  const cpu0 = { api: cpuSeconds(ctx.api.pid), pg: postgresCpu(ctx.api.pid), bench: process.cpuUsage() };
  const sinkBefore = ctx.sink.messages.length;
  const started = performance.now();
  let next = 0;
  let failed = 0;
  // node:http on keep-alive sockets, not fetch: the clients share the server's 2 cores, and
  // fetch (undici's WHATWG layer, web streams) cost twice the CPU per request (bench/README).
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.e2eClients });
  const url = new URL('/v1/send', ctx.base);
  const headers = { authorization: `Bearer ${ctx.project.secret}`, 'content-type': 'application/json' };
  const client = async () => {
    while (next < total) {
      const i = next++;
      const body = JSON.stringify({ to: `e2e${i}@example.com`, from, subject: 'Order {{order}} confirmed', body: BODY_4KB, data: { name: 'Bench', order: { value: `o-${i}`, persistent: false } } });
      if ((await post(agent, url, headers, body)) !== 200) failed++;
    }
  };
  await Promise.all(Array.from({ length: opts.e2eClients }, client));
  agent.destroy();
  const acceptSeconds = (performance.now() - started) / 1000;
  const arrived = () => ctx.sink.messages.length - sinkBefore;
  while (arrived() < total - failed && performance.now() - started < 600_000) await sleep(50);
  const seconds = (performance.now() - started) / 1000;
  // Late duplicates would still arrive: a short wait, then every recipient is counted.
  await sleep(2000);
  const cpu = { api: cpuSeconds(ctx.api.pid) - cpu0.api, worker: cpuSeconds(worker.pid), pg: postgresCpu(ctx.api.pid) - cpu0.pg, bench: process.cpuUsage(cpu0.bench) };
  await worker.stop();
  const perRecipient = new Map();
  for (const m of ctx.sink.messages.slice(sinkBefore)) for (const to of m.to) perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1);
  const wanted = Array.from({ length: total }, (_, i) => `e2e${i}@example.com`);
  const missing = wanted.filter((a) => !perRecipient.has(a)).length;
  const duplicates = [...perRecipient.values()].reduce((s, n) => s + n - 1, 0);
  console.log(`
    accepted        ${total - failed} of ${total} in ${acceptSeconds.toFixed(1)} s: ${((total - failed) / acceptSeconds).toFixed(0)} accepted/s (non-200 ${failed})
    delivered       ${total - missing} at the sink in ${seconds.toFixed(1)} s from the first POST: ${((total - missing) / seconds).toFixed(0)} emails/s end to end
    sink            ${duplicates} duplicates, ${missing} missing
    CPU seconds     api node ${cpu.api.toFixed(1)} s  worker node ${cpu.worker.toFixed(1)} s  postgres ${cpu.pg.toFixed(1)} s  sink+clients ${((cpu.bench.user + cpu.bench.system) / 1e6).toFixed(1)} s`);
  await ctx.pgStats?.print('end to end', { unit: 'email', count: total - missing });
}

const apiNodeArgs = opts.profileApi ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileApi}`] : [];
await withDeliveryBench({ name: 'send', smtpQuery: opts.smtpQuery, pgStats: opts.pgStats, apiNodeArgs }, async (ctx) => {
  if (opts.deliver) await deliveryPhase(ctx);
  if (opts.accept) await acceptancePhase(ctx);
  if (opts.e2e) await endToEndPhase(ctx);
});
