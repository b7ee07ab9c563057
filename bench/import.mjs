// CSV import benchmark (POST /contacts/import → GET /contacts/import/:jobId). Not a test: the
// numbers depend on the machine and on what else runs on it. See bench/import.md.
//
//   node bench/import.mjs                         # starts `npm start` on a temp DATA_DIR and a free port
//   node bench/import.mjs --runs 3 --keep         # more runs; keep the DATA_DIR
//   node bench/import.mjs --base http://127.0.0.1:8080 --secret sk_…   # a running server and project
//
// Per run: a ~5 MB CSV (email + 5 data columns, as many rows as fit under 5 MiB) is generated,
// uploaded as multipart field `file`, and the job polled every 100 ms until it ends. Reported:
// upload → 202, upload start → COMPLETED, rows/s. Run 1 creates the contacts, later runs update
// every one of them (other values). Then, unless --no-fields, 30,000 more contacts are imported
// to reach 100,000 and GET /contacts/fields is timed (median of 5).
import { spawn } from 'node:child_process';
import console from 'node:console';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort } from './lib/proc.mjs';

const { fetch, FormData, Blob, Buffer } = globalThis;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAX_BYTES = 5 * 1024 * 1024;
const JOB_TIMEOUT_MS = 120_000;

const { values: opts } = parseArgs({
  options: {
    base: { type: 'string' },
    secret: { type: 'string' },
    runs: { type: 'string', default: '2' },
    keep: { type: 'boolean', default: false },
    'no-fields': { type: 'boolean', default: false },
  },
});

/** `npm start` in its own process group on a fresh DATA_DIR (searchable by the postgres user). */
async function startServer() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-import-'));
  chmodSync(tmp, 0o755);
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: 'info' };
  for (const name of ['DATABASE_URL', 'ROLE', 'SECRET', 'PUBLIC_URL', 'RATE_LIMIT_PER_MINUTE']) delete env[name];
  const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  // The worker's own run time of each import job, from its log line.
  const taskMs = [];
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (c) => {
    const lines = (partial + c).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const m = /Completed task \d+ \(contacts-import, ([\d.]+)ms/.exec(line);
      if (m) taskMs.push(Number(m[1]));
    }
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited: ${stderr.trim().split('\n').pop()}`);
    const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (performance.now() > deadline) throw new Error('/health not 200 within 120 s');
    await sleep(100);
  }
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      if (child.exitCode !== null || child.signalCode !== null) break;
      try {
        process.kill(-child.pid, signal); // the group started above: npm, sh, tsx, server
      } catch {
        break;
      }
      await Promise.race([exited, sleep(30_000)]);
    }
    if (!opts.keep) rmSync(tmp, { recursive: true, force: true });
  };
  return { base, stop, taskMs };
}

async function createProject(base) {
  const email = `bench-${Date.now()}@example.com`;
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'bench-password-123' }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
  const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0];
  const res = await fetch(`${base}/users/@me/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify({ name: 'import bench' }),
  });
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${await res.text()}`);
  return (await res.json()).secret;
}

const PLANS = ['free', 'starter', 'pro', 'team', 'enterprise'];
const CITIES = ['Oslo', 'Lisbon', 'Nairobi', 'Osaka', 'Lima', 'Toronto', 'Pune', 'Accra', 'Tallinn', 'Austin'];

/** A CSV of `email,first_name,plan,city,score,signed_up` rows, as many as fit under `maxBytes`. */
function makeCsv({ maxBytes, variant = 0, firstRow = 0, maxRows = Infinity }) {
  const lines = ['email,first_name,plan,city,score,signed_up'];
  let bytes = lines[0].length + 1;
  for (let i = firstRow; i - firstRow < maxRows; i++) {
    const day = String(1 + ((i + variant) % 28)).padStart(2, '0');
    const line = `user${String(i).padStart(7, '0')}@bench-${i % 97}.example.com,Name${i % 1000},${PLANS[(i + variant) % 5]},${CITIES[(i * 7 + variant) % 10]},${(i * 13 + variant) % 1000},2024-03-${day}`;
    if (bytes + line.length + 1 > maxBytes) break;
    lines.push(line);
    bytes += line.length + 1;
  }
  return { csv: `${lines.join('\n')}\n`, rows: lines.length - 1 };
}

async function importCsv(base, secret, csv) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
  const t0 = performance.now();
  const res = await fetch(`${base}/contacts/import`, { method: 'POST', headers: { authorization: `Bearer ${secret}` }, body: form });
  const uploadedMs = performance.now() - t0;
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${await res.text()}`);
  const { jobId } = await res.json();
  for (;;) {
    const status = await (await fetch(`${base}/contacts/import/${jobId}`, { headers: { authorization: `Bearer ${secret}` } })).json();
    if (status.status === 'COMPLETED' || status.status === 'FAILED') return { ...status, uploadedMs, totalMs: performance.now() - t0 };
    if (performance.now() - t0 > JOB_TIMEOUT_MS) throw new Error(`job ${jobId} not finished within ${JOB_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  console.log(`machine: ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? '?'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, node ${process.version}`);
  const server = opts.base ? { base: opts.base, stop: async () => undefined, taskMs: [] } : await startServer();
  try {
    const secret = opts.secret ?? (await createProject(server.base));
    const runs = Number(opts.runs);
    let rows = 0;
    for (let run = 1; run <= runs; run++) {
      const file = makeCsv({ maxBytes: MAX_BYTES, variant: run - 1 });
      rows = file.rows;
      const r = await importCsv(server.base, secret, file.csv);
      await sleep(200); // the log line follows the status change
      const task = server.taskMs.at(-1);
      const ok = r.status === 'COMPLETED' && r.processed === file.rows && r.failed === 0;
      console.log(
        `run ${run} (${run === 1 ? 'new contacts' : 'updates'}): ${file.rows} rows, ${(Buffer.byteLength(file.csv) / 2 ** 20).toFixed(2)} MiB; ` +
          `upload → 202 ${Math.round(r.uploadedMs)} ms; upload start → ${r.status} ${Math.round(r.totalMs)} ms` +
          `${task === undefined ? '' : ` (worker task ${Math.round(task)} ms)`}; ` +
          `${Math.round(file.rows / (r.totalMs / 1000))} rows/s${ok ? '' : `  UNEXPECTED: ${JSON.stringify({ ...r, errors: r.errors.slice(0, 3) })}`}`,
      );
    }
    if (!opts['no-fields']) {
      const more = makeCsv({ maxBytes: MAX_BYTES, firstRow: rows, maxRows: 100_000 - rows });
      const r = await importCsv(server.base, secret, more.csv);
      console.log(`fields: +${more.rows} contacts (${r.status} in ${Math.round(r.totalMs)} ms)`);
      const times = [];
      let body;
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        const res = await fetch(`${server.base}/contacts/fields`, { headers: { authorization: `Bearer ${secret}` } });
        body = await res.json();
        times.push(performance.now() - t0);
      }
      console.log(
        `GET /contacts/fields on ${body.totalContacts} contacts, ${body.data.length - 4} data keys: median ${Math.round(median(times))} ms ` +
          `(runs: ${times.map((t) => Math.round(t)).join(', ')})`,
      );
    }
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
