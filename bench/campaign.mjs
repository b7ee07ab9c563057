// Benchmark of a campaign to 100,000 contacts, not a test: numbers depend on the machine.
//
//   node --import tsx bench/campaign.mjs                     # 100,000 contacts
//   node --import tsx bench/campaign.mjs --contacts 20000 --unsubscribed-every 10
//
// Starts an SMTP sink (smtp-server, in this process) and the server as `ROLE=api` on a temp
// DATA_DIR (embedded PostgreSQL) with SMTP_URL at the sink, seeds --contacts contacts in one
// INSERT … SELECT, creates a MARKETING campaign to ALL through the API, starts a `ROLE=worker`
// process, then POST /campaigns/:id/send and measures:
//  (a) materialisation: from the send answer until total_recipients is set (the campaign-send job:
//      one INSERT … SELECT of the email rows plus their send-email jobs, one transaction);
//  (b) delivery: until the campaign is SENT (every email finished), at the pipeline's full rate
//      (each email rendered per recipient at delivery, DKIM-signed);
// then checks that the sink got every email's Message-ID exactly once, that every subscribed
// contact got exactly one message and no unsubscribed one got any.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import console from 'node:console';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createSecretBox } from '../src/lib/secret-box.ts';
import { generateDkimKey } from '../src/modules/domains/dkim-keys.ts';
import { startDnsServer } from '../test/helpers/dns-server.ts';
import { startSmtpSink } from '../test/helpers/smtp-sink.ts';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
};
const opts = {
  contacts: Number(arg('contacts', '100000')),
  unsubscribedEvery: Number(arg('unsubscribed-every', '0')),
};
const fetch = globalThis.fetch;
const SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const root = process.cwd();
const CLK_TCK = 100;

async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function cpuSeconds(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK;
  } catch {
    return 0;
  }
}

function processes() {
  const list = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      list.push({ pid: Number(name), ppid, comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
    } catch {
      // exited meanwhile
    }
  }
  return list;
}

/** CPU seconds of the PostgreSQL started by the API process (postmaster, its reaped children, live backends). */
function postgresCpu(apiPid) {
  const all = processes();
  const below = (pid) => all.filter((p) => p.ppid === pid);
  const queue = [apiPid];
  let total = 0;
  while (queue.length > 0) {
    for (const p of below(queue.shift())) {
      queue.push(p.pid);
      if (p.comm === 'postgres') total += cpuSeconds(p.pid, below(p.pid).length > 0);
    }
  }
  return total;
}

/** Spawns `node --import tsx src/server.ts` with `env`; resolves once `readyPattern` is logged. */
async function spawnServer(env, readyPattern, nodeArgs = []) {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src/server.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c) => (out = (out + c).slice(-200_000)));
  const deadline = Date.now() + 120_000;
  while (!readyPattern.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}\n${out}`);
    if (Date.now() > deadline) throw new Error(`server not ready within 120 s\n${out}`);
    await sleep(50);
  }
  return {
    pid: child.pid,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(30_000)]);
    },
  };
}

async function json(res, expected) {
  if (res.status !== expected) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return res.json();
}

async function createProject(base) {
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'bench password 123' }),
  });
  await json(signup, 201);
  const cookie = signup.headers.get('set-cookie').split(';')[0];
  return json(await fetch(`${base}/users/@me/projects`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'bench' }) }), 201);
}

async function addVerifiedDomain(client, projectId, domain) {
  const key = await generateDkimKey();
  await client.query(
    `INSERT INTO domains (project_id, domain, dkim_selector, dkim_public_key, dkim_private_key, verified, verified_at) VALUES ($1, $2, 'bench', $3, $4, true, now())`,
    [projectId, domain, key.publicKey, createSecretBox(SECRET, 'dkim').seal(key.privateKeyPem)],
  );
  return key;
}

const BODY = `<html><body><table><tr><td><h1>Hello {{firstName ?? there}}</h1><p>Our <b>{{plan}}</b> plan news.
<a href="https://shop.example/news">Read more</a></p><p>Thanks for reading.</p></td></tr></table></body></html>`;

async function seed(client, projectId) {
  const started = performance.now();
  await client.query(
    `INSERT INTO contacts (project_id, email, subscribed, data)
     SELECT $1, 'reader' || i || '@example.com', NOT ($2::int > 0 AND i % $2::int = 0),
            jsonb_build_object('firstName', 'Reader' || i, 'plan', CASE WHEN i % 3 = 0 THEN 'pro' ELSE 'free' END)
     FROM generate_series(1, $3::int) AS i`,
    [projectId, opts.unsubscribedEvery, opts.contacts],
  );
  await client.query('ANALYZE contacts');
  return (performance.now() - started) / 1000;
}

async function campaignPhase(ctx) {
  const { client, project } = ctx;
  const seedSeconds = await seed(client, project.id);
  const { rows: [{ n: expected }] } = await client.query(`SELECT count(*)::int AS n FROM contacts WHERE project_id = $1 AND subscribed`, [project.id]);
  console.log(`seeded ${opts.contacts} contacts (${expected} subscribed) in ${seedSeconds.toFixed(1)} s`);
  const headers = { authorization: `Bearer ${project.secret}`, 'content-type': 'application/json' };
  const created = await json(await fetch(`${ctx.base}/campaigns`, {
    method: 'POST', headers, body: JSON.stringify({ name: 'Bench', subject: 'News for {{firstName}}', body: BODY, from: `news@${ctx.domain}` }),
  }), 201);
  const id = created.data.id;
  const worker = await spawnServer({ ...ctx.env, ROLE: 'worker', DATABASE_URL: ctx.databaseUrl }, /ready: worker running/);
  const cpu0 = { pg: postgresCpu(ctx.api.pid), bench: process.cpuUsage() };
  const started = performance.now();
  await json(await fetch(`${ctx.base}/campaigns/${id}/send`, { method: 'POST', headers, body: '{}' }), 200);
  const answered = performance.now();
  let materialised;
  const samples = [];
  for (;;) {
    const { rows: [c] } = await client.query(`SELECT status, total_recipients FROM campaigns WHERE id = $1`, [id]);
    if (materialised === undefined && c.total_recipients > 0) materialised = (performance.now() - answered) / 1000;
    if (materialised !== undefined) {
      const { rows: [e] } = await client.query(`SELECT count(*) FILTER (WHERE status NOT IN ('PENDING', 'SENDING'))::int AS done FROM emails WHERE campaign_id = $1`, [id]);
      samples.push([(performance.now() - started) / 1000, e.done]);
    }
    if (c.status === 'SENT' || performance.now() - started > 1_800_000) break;
    await sleep(250);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = { worker: cpuSeconds(worker.pid), pg: postgresCpu(ctx.api.pid) - cpu0.pg, bench: process.cpuUsage(cpu0.bench) };
  await worker.stop();
  const total = samples.at(-1)?.[1] ?? 0;
  const mid = samples.filter(([, n]) => n >= total * 0.1 && n <= total * 0.9);
  const steady = mid.length > 1 ? (mid.at(-1)[1] - mid[0][1]) / (mid.at(-1)[0] - mid[0][0]) : NaN;

  const { rows: emails } = await client.query(`SELECT message_id, to_email, status FROM emails WHERE campaign_id = $1`, [id]);
  const { rows: [counts] } = await client.query(`SELECT total_recipients, status FROM campaigns WHERE id = $1`, [id]);
  const received = ctx.sink.messages.filter((m) => m.messageId?.endsWith(`@${ctx.domain}>`));
  const distinct = new Set(received.map((m) => m.messageId));
  const missing = emails.filter((e) => !distinct.has(e.message_id)).length;
  const perAddress = new Map();
  for (const m of received) for (const to of m.to) perAddress.set(to, (perAddress.get(to) ?? 0) + 1);
  const { rows: unsub } = await client.query(`SELECT email FROM contacts WHERE project_id = $1 AND NOT subscribed`, [project.id]);
  const toUnsubscribed = unsub.filter((u) => perAddress.has(u.email)).length;
  const twice = [...perAddress.values()].filter((n) => n > 1).length;
  console.log(`
    materialise     ${counts.total_recipients} recipients in ${materialised?.toFixed(2)} s after the send answer (send answered in ${((answered - started) / 1000).toFixed(2)} s)
    delivery        campaign ${counts.status} after ${seconds.toFixed(1)} s: ${(emails.length / seconds).toFixed(0)} emails/s overall (steady 10–90%: ${steady.toFixed(0)}/s)
    statuses        ${JSON.stringify(emails.reduce((acc, e) => ({ ...acc, [e.status]: (acc[e.status] ?? 0) + 1 }), {}))}
    sink            ${received.length} messages, ${distinct.size} distinct Message-IDs, ${received.length - distinct.size} duplicates, ${missing} missing; ${twice} addresses twice; ${toUnsubscribed} to unsubscribed contacts; expected ${expected}
    CPU seconds     worker node ${cpu.worker.toFixed(1)} s  postgres ${cpu.pg.toFixed(1)} s  sink+bench ${((cpu.bench.user + cpu.bench.system) / 1e6).toFixed(1)} s`);
}

const tmp = mkdtempSync(path.join(tmpdir(), 'bench-campaign-'));
chmodSync(tmp, 0o755);
const sink = await startSmtpSink({ keepRaw: false });
const dns = await startDnsServer();
const port = await freePort();
const env = { ...process.env, DNS_SERVERS: dns.address, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: path.join(tmp, 'data'), LOG_LEVEL: 'info', SECRET, RATE_LIMIT_PER_MINUTE: '10000000', SMTP_URL: sink.url };
for (const name of ['DATABASE_URL', 'ROLE', 'PUBLIC_URL', 'REDIS_URL']) delete env[name];
let api;
let client;
try {
  api = await spawnServer({ ...env, ROLE: 'api' }, /ready: API/);
  const databaseUrl = readFileSync(path.join(env.DATA_DIR, 'postgres.url'), 'utf8').trim();
  client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const base = `http://127.0.0.1:${port}`;
  const project = await createProject(base);
  const domain = 'bench-sender.example';
  const key = await addVerifiedDomain(client, project.id, domain);
  dns.set(`bench._domainkey.${domain}`, { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey}`] });
  console.log(`machine: ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm).length} CPUs, node ${process.version}; SMTP_URL ${env.SMTP_URL}`);
  await campaignPhase({ api, base, client, databaseUrl, domain, env, key, project, sink });
} finally {
  await client?.end().catch(() => undefined);
  await api?.stop();
  await sink.close();
  await dns.close();
  rmSync(tmp, { recursive: true, force: true });
}
