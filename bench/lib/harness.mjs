// Shared by the delivery benchmarks (send.mjs, campaign.mjs): processes, CPU accounting, the
// server under test, and a project with a verified sender domain. Run them with `--import tsx`.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSecretBox } from '../../src/lib/secret-box.ts';
import { generateDkimKey } from '../../src/modules/domains/dkim-keys.ts';

export const SECRET = 'bench-secret-0123456789abcdefghijklmnopqrstuvwxyz';
const root = process.cwd();
const CLK_TCK = 100;
const fetch = globalThis.fetch;

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export function cpuSeconds(pid, withChildren = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0)) / CLK_TCK;
  } catch {
    return 0;
  }
}

export function processes() {
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
export function postgresCpu(apiPid) {
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
export async function spawnServer(env, readyPattern, nodeArgs = []) {
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

export async function json(res, expected) {
  if (res.status !== expected) throw new Error(`${res.url}: ${res.status} ${await res.text()}`);
  return res.json();
}

export async function createProject(base) {
  const signup = await fetch(`${base}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'bench password 123' }),
  });
  await json(signup, 201);
  const cookie = signup.headers.get('set-cookie').split(';')[0];
  return json(await fetch(`${base}/users/@me/projects`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'bench' }) }), 201);
}

export async function addVerifiedDomain(client, projectId, domain) {
  const key = await generateDkimKey();
  await client.query(
    `INSERT INTO domains (project_id, domain, dkim_selector, dkim_public_key, dkim_private_key, verified, verified_at) VALUES ($1, $2, 'bench', $3, $4, true, now())`,
    [projectId, domain, key.publicKey, createSecretBox(SECRET, 'dkim').seal(key.privateKeyPem)],
  );
  return key;
}
