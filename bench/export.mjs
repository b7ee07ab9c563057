// Contact export at scale (issue 12 point 6): GET /contacts/export of a project with --contacts
// contacts (default 1,000,000), measured from a separate client process against the server
// started as `npm start` starts it (the compiled server, ROLE all, embedded PostgreSQL in a temp
// DATA_DIR). For each export: time to the first byte, total time, bytes, records, and the
// server's resident memory (VmRSS sampled every 100 ms from /proc, before / peak / after, and
// its VmHWM), node and PostgreSQL CPU seconds. Target: 1,000,000 contacts in < 30 s, flat memory.
//
//   node --import tsx bench/export.mjs [--contacts 1000000] [--keep]
//
// The project is created through the API; its contacts are seeded straight into the database by
// bench/seed-contacts.mjs (5 data keys each, VACUUM ANALYZE). The exports run one after another:
// the whole project as CSV, as NDJSON, a condition (data.plan = pro, ~1/6), a slow reader (at
// --slow-rate MiB/s, default 2, for --slow-seconds, default 10, then at full speed: the server
// must wait on it without buffering the file).
// Every record count is checked against the database; the script exits 1 on any mismatch.
import { spawn } from 'node:child_process';
import { clearInterval, setInterval } from 'node:timers';
import console from 'node:console';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { cpuSeconds, createProject, freePort, postgresCpu, SECRET, spawnServer } from './lib/harness.mjs';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}
const nContacts = Number(arg('contacts', '1000000'));
const slowSeconds = Number(arg('slow-seconds', '10'));
const slowRate = Number(arg('slow-rate', '2')); // MiB per second while slow
const keep = process.argv.includes('--keep');
const fetch = globalThis.fetch;

/** VmRSS and VmHWM of a process, in MiB. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kib('VmRSS') / 1024, hwm: kib('VmHWM') / 1024 };
}

const mib = (n) => n.toFixed(0);

/** Streams one export, counting bytes and line ends; `pace(bytesSoFar, elapsedMs)` may delay reading. */
async function runExport(base, key, pid, name, query, pace) {
  const before = memory(pid);
  let peak = before.rss;
  const samples = [];
  const sampler = setInterval(() => {
    const rss = memory(pid).rss;
    samples.push(rss);
    peak = Math.max(peak, rss);
  }, 100);
  const cpu0 = { node: cpuSeconds(pid), pg: postgresCpu(pid) };
  const started = performance.now();
  const res = await fetch(`${base}/contacts/export${query}`, { headers: { authorization: `Bearer ${key}` } });
  const firstByte = performance.now() - started;
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) lines++;
    if (pace) await pace(bytes, performance.now() - started);
  }
  const ms = performance.now() - started;
  clearInterval(sampler);
  const after = memory(pid);
  const cpu = { node: cpuSeconds(pid) - cpu0.node, pg: postgresCpu(pid) - cpu0.pg };
  const result = { name, ms, firstByte, bytes, lines, before: before.rss, peak: Math.max(peak, after.rss), after: after.rss, hwm: after.hwm, cpu, disposition: res.headers.get('content-disposition') };
  // RSS at each quarter of the export's time: flat memory plateaus, a leak climbs with the bytes sent.
  const quarters = [0.25, 0.5, 0.75, 1].map((q) => samples[Math.max(0, Math.ceil(q * samples.length) - 1)] ?? after.rss);
  console.log(
    `${name.padEnd(26)} ${(ms / 1000).toFixed(2).padStart(6)} s (first byte ${firstByte.toFixed(0)} ms)  ${(bytes / 1048576).toFixed(1)} MiB  ${lines.toLocaleString('en')} lines  ` +
      `RSS ${mib(before.rss)} → peak ${mib(result.peak)} → ${mib(after.rss)} MiB (at 1/4, 1/2, 3/4, end: ${quarters.map(mib).join(', ')}; VmHWM ${mib(after.hwm)})  CPU node ${cpu.node.toFixed(1)} s, PostgreSQL ${cpu.pg.toFixed(1)} s`,
  );
  return result;
}

const tmp = mkdtempSync(path.join(tmpdir(), 'bench-export-'));
chmodSync(tmp, 0o755);
const port = await freePort();
const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: 'info', SECRET };
for (const variable of ['DATABASE_URL', 'ROLE', 'PUBLIC_URL', 'REDIS_URL', 'SMTP_URL']) delete env[variable];
let server;
let db;
let failed = false;
try {
  server = await spawnServer(env, /ready: API/);
  const base = `http://127.0.0.1:${port}`;
  const url = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
  console.log(`machine: ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm).length} CPUs, node ${process.version}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  const project = await createProject(base);
  await new Promise((resolve, reject) => {
    const seed = spawn(process.execPath, ['bench/seed-contacts.mjs', '--url', url, '--count', String(nContacts), '--project', project.id], { stdio: 'inherit' });
    seed.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`seed exited with ${code}`))));
  });
  db = new pg.Client({ connectionString: url });
  await db.connect();
  const count = async (where = 'TRUE') =>
    (await db.query(`SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND ${where}`, [project.id])).rows[0].n;
  const total = await count();
  const pro = await count(`data @> '{"plan": "pro"}'`);
  await sleep(2000); // the server settles after start-up and seeding (its worker's first jobs)

  const condition = encodeURIComponent(JSON.stringify({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] }));
  const slowUntil = slowSeconds * 1000;
  const runs = [
    [await runExport(base, project.secret, server.pid, 'CSV, all', '', undefined), total + 1],
    [await runExport(base, project.secret, server.pid, 'NDJSON, all', '?format=ndjson', undefined), total],
    [await runExport(base, project.secret, server.pid, 'CSV, condition plan=pro', `?condition=${condition}`, undefined), pro + 1],
    [
      await runExport(base, project.secret, server.pid, `CSV, ${slowRate} MiB/s for ${slowSeconds} s`, '', async (bytes, elapsed) => {
        while (elapsed < slowUntil && bytes > (elapsed / 1000) * slowRate * 1048576) {
          await sleep(50);
          elapsed += 50;
        }
      }),
      total + 1,
    ],
  ];
  for (const [r, expected] of runs) {
    if (r.lines !== expected) {
      failed = true;
      console.log(`MISMATCH ${r.name}: ${r.lines} lines, expected ${expected}`);
    }
  }
  console.log(`file name: ${runs[0][0].disposition}`);
  console.log(`server peak RSS (VmHWM over the whole run, seeding included) ${mib(memory(server.pid).hwm)} MiB`);
} finally {
  await db?.end().catch(() => undefined);
  await server?.stop();
  if (!keep) rmSync(tmp, { recursive: true, force: true });
  else console.log(`kept ${tmp}`);
}
process.exit(failed ? 1 : 0);
