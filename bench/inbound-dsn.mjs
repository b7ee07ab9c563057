// Benchmark of the inbound SMTP receiver (issue 14), not a test: numbers depend on the machine.
//
//   node --import tsx bench/inbound-dsn.mjs                       # both phases, defaults below
//   node --import tsx bench/inbound-dsn.mjs --emails 4000 --connections 10 --sources 3
//   node --import tsx bench/inbound-dsn.mjs --phases alone --cpu-prof /tmp/prof --pg-stats
//
// Starts an SMTP sink and the server as ROLE=api (withDeliveryBench), then a ROLE=worker process
// with BOUNCE_DOMAIN and INBOUND_SMTP_PORT set: it delivers --emails emails per phase (VERP return
// paths) and runs the receiver. Two phases (--phases alone,send): the reports alone, then the
// reports with /v1/send beside them. Once every email reached the sink, THIS process (a separate client)
// sends one report per email to its VERP address from --sources loopback addresses (127.0.0.1,
// 127.0.0.2, …: several remote MTAs, as bounces come from many), each over --connections pooled
// SMTP connections (at most 10: the receiver's limit of connections at once per address):
// 60 % RFC 3464 hard bounces, 20 % Gmail-style prose hard bounces, 20 % Yahoo-style prose soft
// bounces (test/fixtures/bounces). The rate is reports answered 250 per second of wall time; each
// 250 comes after the report was applied and stored (one transaction). Then checks the database:
// every report stored, every hard bounce BOUNCED and suppressed, every soft bounce counted.
// /v1/send beside it (phase "send"): 4 clients POST /v1/send (one recipient each, a second
// project: the bounced one is auto-disabled by its bounce rate) for --send-seconds alone, then
// during the reports; the two acceptance rates are compared (--send-seconds 0: the phase alone only).
// --send-rate N paces /v1/send at N requests/s (default 0: as fast as the server answers, which
// on a saturated machine measures how the two share the CPU rather than whether sending keeps its pace).
// Profiling: --cpu-prof DIR writes a V8 CPU profile of the worker+receiver process when it exits;
// --pg-stats turns on track_functions (ALTER SYSTEM, reloaded) and prints, per phase, the time
// PostgreSQL spent in each trigger function and the rows written per table.
import { Buffer } from 'node:buffer';
import console from 'node:console';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { URL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import nodemailer from 'nodemailer';
import { addVerifiedDomain, createProject, cpuSeconds, freePort, json, postgresCpu, spawnServer, withDeliveryBench } from './lib/harness.mjs';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const opts = {
  emails: Number(arg('emails', '3000')), connections: Number(arg('connections', '10')), sources: Number(arg('sources', '3')), sendSeconds: Number(arg('send-seconds', '8')), sendRate: Number(arg('send-rate', '0')),
  phases: arg('phases', process.argv.includes('--send-seconds') && Number(arg('send-seconds', '8')) === 0 ? 'alone' : 'alone,send').split(','), cpuProf: arg('cpu-prof', undefined), pgStats: process.argv.includes('--pg-stats'),
};
if (opts.phases.some((p) => p !== 'alone' && p !== 'send')) throw new Error('--phases: alone, send or both (alone,send)');
const fetch = globalThis.fetch;
const BOUNCE_DOMAIN = 'bounces.bench.example';

const fixture = (name) => readFileSync(new URL(`../test/fixtures/bounces/${name}`, import.meta.url), 'utf8');
const FIXTURES = { hard: fixture('rfc3464.eml'), gmail: fixture('gmail.eml'), soft: fixture('yahoo-soft.eml') };
const fill = (text, v) =>
  Buffer.from(
    text.replaceAll('{{VERP}}', v.verp).replaceAll('{{RECIPIENT}}', v.to).replaceAll('{{MESSAGE_ID}}', v.messageId).replaceAll('{{REPORT_ID}}', v.reportId).replace(/\r?\n/g, '\r\n'),
  );

/** POSTs /v1/send (one recipient each) from 4 clients until `stop()` resolves; answers the accepted count and seconds. */
async function sendLoad(ctx, load, stop) {
  let accepted = 0;
  let n = 0;
  let done = false;
  void stop.then(() => (done = true));
  const started = performance.now();
  const lane = async () => {
    while (!done) {
      const i = n++;
      // --send-rate N: request i is due at i/N s (a steady application's traffic); 0: as fast as the server answers.
      if (opts.sendRate > 0) {
        const wait = started + (i / opts.sendRate) * 1000 - performance.now();
        if (wait > 0) await sleep(wait);
        if (done) break;
      }
      const res = await fetch(`${ctx.base}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${load.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `load${i}@load.example`, from: load.from, subject: 'Hello', body: '<p>Hello</p>' }),
      });
      await json(res, 200);
      accepted++;
    }
  };
  await Promise.all(Array.from({ length: 4 }, lane));
  return { accepted, seconds: (performance.now() - started) / 1000 };
}

async function drained(ctx, expected) {
  const deadline = Date.now() + 600_000;
  while (ctx.sink.messages.length < expected) {
    if (Date.now() > deadline) throw new Error(`only ${ctx.sink.messages.length} of ${expected} emails delivered`);
    await sleep(250);
  }
}

await withDeliveryBench({ name: 'inbound-dsn' }, async (ctx) => {
  const inboundPort = await freePort();
  const workerEnv = {
    ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl, BOUNCE_DOMAIN, INBOUND_SMTP_PORT: String(inboundPort), INBOUND_SMTP_HOST: '127.0.0.1',
    INBOUND_SMTP_MESSAGES_PER_MINUTE: '10000000', INBOUND_SMTP_CONNECTIONS_PER_MINUTE: '10000000',
  };
  const worker = await spawnServer(workerEnv, /ready: worker running/, opts.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProf] : []);
  try {
    const from = `orders@${ctx.domain}`;
    const total = opts.emails * opts.phases.length;
    console.log(`delivering ${total} emails with VERP return paths (${opts.emails} per phase)…`);
    for (let first = 0; first < total; first += 50) {
      const to = Array.from({ length: Math.min(50, total - first) }, (_, i) => `user${first + i}@recipient.example`);
      const res = await fetch(`${ctx.base}/v1/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.project.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to, from, subject: 'Welcome', body: '<p>Hello</p>', subscribed: true }),
      });
      await json(res, 200);
    }
    await drained(ctx, total);
    const reports = ctx.sink.messages.slice(0, total).map((m, i) => {
      const kind = i % 5 === 3 ? 'gmail' : i % 5 === 4 ? 'soft' : 'hard';
      const v = { verp: m.from, to: m.to[0], messageId: m.messageId, reportId: `bench-${i}` };
      if (!m.from.endsWith(`@${BOUNCE_DOMAIN}`)) throw new Error(`envelope sender ${m.from} is not a VERP address`);
      return { kind, to: m.from, raw: fill(FIXTURES[kind], v) };
    });
    if (opts.pgStats) {
      await ctx.client.query(`ALTER SYSTEM SET track_functions = 'pl'`);
      await ctx.client.query('SELECT pg_reload_conf()');
    }

    let load;
    let delivered = total;
    let accepted = 0;
    for (const [n, phase] of opts.phases.entries()) {
      const batch = reports.slice(n * opts.emails, (n + 1) * opts.emails);
      console.log(`\n## phase ${phase}: ${batch.length} reports to the receiver from ${opts.sources} addresses × ${opts.connections} connections (this process, a separate client)${phase === 'send' ? ', /v1/send beside them' : ''}; load average ${loadavg()}`);
      let alone;
      if (phase === 'send') {
        if (!load) {
          const project = await createProject(ctx.base);
          // A second account: verified by hand, as a project sends only once an owner is (docs/accounts.md).
          await ctx.client.query('UPDATE users SET email_verified_at = now() WHERE email_verified_at IS NULL');
          await addVerifiedDomain(ctx.client, project.id, 'load-sender.example');
          load = { secret: project.secret, from: 'hello@load-sender.example' };
        }
        alone = await sendLoad(ctx, load, sleep(opts.sendSeconds * 1000));
        console.log(`/v1/send alone: ${alone.accepted} accepted in ${alone.seconds.toFixed(1)} s = ${(alone.accepted / alone.seconds).toFixed(0)}/s`);
        delivered += alone.accepted;
        await drained(ctx, delivered);
      }
      const result = await runReports(ctx, worker, inboundPort, batch, phase === 'send' ? load : undefined);
      accepted += result.accepted;
      if (result.during) {
        delivered += result.during.accepted;
        console.log(`/v1/send during the reports: ${result.during.accepted} accepted in ${result.during.seconds.toFixed(1)} s = ${(result.during.accepted / result.during.seconds).toFixed(0)}/s (alone: ${(alone.accepted / alone.seconds).toFixed(0)}/s)`);
        await drained(ctx, delivered);
      }
    }

    const q = async (text) => (await ctx.client.query(text, [ctx.project.id])).rows[0];
    const stored = await q(`SELECT count(*)::int AS n, count(*) FILTER (WHERE outcome = 'recorded')::int AS recorded, count(*) FILTER (WHERE outcome = 'soft-bounce')::int AS soft FROM inbound_feedback WHERE project_id = $1`);
    const bounced = await q(`SELECT count(*)::int AS n FROM emails WHERE project_id = $1 AND status = 'BOUNCED'`);
    const suppressed = await q(`SELECT count(*)::int AS n FROM suppressions WHERE project_id = $1`);
    const soft = await q(`SELECT count(*)::int AS n FROM soft_bounces WHERE project_id = $1`);
    const events = await q(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND name = 'email.bounce'`);
    const unsubscribed = await q(`SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND NOT subscribed`);
    const hard = reports.filter((r) => r.kind !== 'soft').length;
    // (the /v1/send load's emails are delivered, never bounced: they are not in these counts)
    console.log(`\nstored ${stored.n} (recorded ${stored.recorded}, soft ${stored.soft}); BOUNCED ${bounced.n} of ${hard} hard; email.bounce events ${events.n}; unsubscribed ${unsubscribed.n}; suppressed ${suppressed.n}; soft bounces counted ${soft.n} of ${reports.length - hard}`);
    const ok = stored.n === accepted && bounced.n === hard && events.n === hard && unsubscribed.n === hard && suppressed.n === hard && soft.n === reports.length - hard;
    console.log(ok ? 'checks: ok' : 'checks: MISMATCH');
    if (!ok) process.exitCode = 1;
  } finally {
    if (opts.pgStats) await ctx.client.query('ALTER SYSTEM RESET track_functions').catch(() => undefined);
    await worker.stop();
  }
});

function loadavg() {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Sends the reports (and, with `load`, /v1/send beside them); prints the rate, latency and where the CPU went. */
async function runReports(ctx, worker, inboundPort, reports, load) {
  let reportsDone;
  const beside = load ? sendLoad(ctx, load, new Promise((resolve) => (reportsDone = resolve))) : undefined;
  const transports = Array.from({ length: opts.sources }, (_, i) =>
    nodemailer.createTransport({ host: '127.0.0.1', port: inboundPort, localAddress: `127.0.0.${i + 1}`, secure: false, ignoreTLS: true, pool: true, maxConnections: opts.connections, maxMessages: Infinity }),
  );
  if (opts.pgStats) await ctx.client.query('SELECT pg_stat_reset()');
  const cpu0 = { worker: cpuSeconds(worker.pid), api: cpuSeconds(ctx.api.pid), pg: postgresCpu(ctx.api.pid), client: process.cpuUsage() };
  const started = performance.now();
  const latencies = [];
  let next = 0;
  let refused = 0;
  const lane = async (transport) => {
    while (next < reports.length) {
      const r = reports[next++];
      const t0 = performance.now();
      try {
        await transport.sendMail({ envelope: { from: '', to: [r.to] }, raw: r.raw });
      } catch (err) {
        refused++;
        if (refused < 5) console.log(`  refused: ${err.message}`);
      }
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(transports.flatMap((transport) => Array.from({ length: opts.connections }, () => lane(transport))));
  const seconds = (performance.now() - started) / 1000;
  for (const transport of transports) transport.close();
  reportsDone?.();
  const during = await beside;
  const clientCpu = process.cpuUsage(cpu0.client);
  const cpu = {
    worker: cpuSeconds(worker.pid) - cpu0.worker, api: cpuSeconds(ctx.api.pid) - cpu0.api, pg: postgresCpu(ctx.api.pid) - cpu0.pg,
    client: (clientCpu.user + clientCpu.system) / 1e6,
  };
  latencies.sort((a, b) => a - b);
  const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(1);
  const accepted = reports.length - refused;
  console.log(`${accepted} reports accepted (250) in ${seconds.toFixed(2)} s: **${(accepted / seconds).toFixed(0)} DSNs/s**; latency p50 ${pct(50)} ms, p99 ${pct(99)} ms; ${refused} refused; load average after ${loadavg()}`);
  console.log(`CPU during the reports (s): worker+receiver ${cpu.worker.toFixed(1)}, PostgreSQL ${cpu.pg.toFixed(1)}, API ${cpu.api.toFixed(1)}, this client (SMTP + /v1/send + sink) ${cpu.client.toFixed(1)}; wall ${seconds.toFixed(1)} × 2 cores = ${(seconds * 2).toFixed(1)}`);
  if (opts.pgStats) {
    const fns = await ctx.client.query(`SELECT funcname, calls, round(self_time)::int AS self_ms, round(total_time)::int AS total_ms FROM pg_stat_user_functions ORDER BY total_time DESC LIMIT 12`);
    console.log('PostgreSQL trigger/functions (ms):', fns.rows.map((r) => `${r.funcname} ${r.calls}× self ${r.self_ms} total ${r.total_ms}`).join('; '));
    const tables = await ctx.client.query(`SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE n_tup_ins + n_tup_upd > 0 ORDER BY n_tup_ins + n_tup_upd DESC LIMIT 14`);
    console.log('rows written:', tables.rows.map((r) => `${r.relname} +${r.ins}/~${r.upd} (hot ${r.hot})`).join('; '));
    const db = await ctx.client.query(`SELECT xact_commit, xact_rollback, blks_hit, blks_read FROM pg_stat_database WHERE datname = current_database()`);
    console.log('transactions:', JSON.stringify(db.rows[0]));
  }
  return { accepted, during };
}
