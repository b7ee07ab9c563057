import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionCookie, uniqueEmail } from '../helpers/accounts.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { cleanupServers, embeddedPostgresRunning, freePort, makeTempRoot, sleep, startServer, type ServerProcess } from '../helpers/process.js';

// `backup` and `restore` of the embedded database (docs/operations.md "Backups and restore"), on
// real servers: an online backup taken while contacts are being written, restored into a fresh
// DATA_DIR and served from there; and the restores that must be refused.

const EMBEDDED = { DATABASE_URL: undefined, SECRET: undefined };
const cli = (args: string[], dataDir: string, onStderrLine?: (line: string) => void) => runCli(args, { dataDir, env: EMBEDDED, onStderrLine });

let root: string;
let source: ServerProcess;
let secretKey: string;
let from: string;
const written: { email: string; ackedAt: number }[] = [];

/** A refusal: exit 1, nothing on stdout, progress lines then exactly one `error:` line, last; no stack trace. */
function expectOneErrorLine(res: CliResult, message: RegExp): void {
  expect(res.code, res.stderr).toBe(1);
  expect(res.stdout).toBe('');
  const lines = res.stderr.trimEnd().split('\n');
  expect(lines.filter((l) => l.startsWith('error:')), res.stderr).toHaveLength(1);
  expect(lines.at(-1)).toMatch(message);
  expect(res.stderr).not.toMatch(/\bat .+:\d+:\d+/);
}

async function api(port: number, method: string, url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`http://127.0.0.1:${port}${url}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown>, text: '' };
}

const bearer = () => ({ authorization: `Bearer ${secretKey}` });

async function query<T extends pg.QueryResultRow>(dataDir: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: readFileSync(path.join(dataDir, 'postgres.url'), 'utf8') });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

async function sendOne(port: number, to: string): Promise<string> {
  const res = await api(port, 'POST', '/v1/send', { to, from, subject: 'Backed up', body: '<p>Hello</p>' }, bearer());
  expect(res.status, JSON.stringify(res.json)).toBe(200);
  const emails = (res.json.data as { emails: { email: string }[] }).emails;
  return emails[0]?.email ?? '';
}

async function waitForSent(dataDir: string, emailId: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const [row] = await query<{ status: string }>(dataDir, 'SELECT status FROM emails WHERE id = $1', [emailId]);
    if (row?.status === 'SENT') return;
    if (Date.now() > deadline) throw new Error(`email ${emailId} is ${row?.status ?? 'missing'}, not SENT`);
    await sleep(100);
  }
}

beforeAll(async () => {
  root = makeTempRoot();
  source = startServer({ PORT: String(await freePort()), DATA_DIR: path.join(root, 'source') });
  await source.waitForHealth(45_000);
  const signup = await fetch(`http://127.0.0.1:${source.port}/auth/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: uniqueEmail('backup'), password: 'correct horse battery' }),
  });
  expect(signup.status).toBe(201);
  const cookie = sessionCookie(signup.headers.getSetCookie());
  const project = await api(source.port, 'POST', '/users/@me/projects', { name: 'Backed up' }, { cookie });
  expect(project.status).toBe(201);
  secretKey = String(project.json.secret);
  const domain = `backup-${Date.now()}.example`;
  expect((await api(source.port, 'POST', '/domains', { domain }, bearer())).status).toBe(201);
  const verified = await cli(['verify-domain', '--domain', domain], source.dataDir);
  expect(verified.code, verified.stderr).toBe(0);
  from = `hello@${domain}`;
  for (let i = 0; i < 20; i++) {
    const res = await api(source.port, 'POST', '/contacts', { email: `before-${i}@example.com` }, bearer());
    expect(res.status, JSON.stringify(res.json)).toBe(201);
  }
  await waitForSent(source.dataDir, await sendOne(source.port, 'before-0@example.com'));
  // An uploaded file (local storage) goes with the backup.
  mkdirSync(path.join(source.dataDir, 'uploads', 'test'), { recursive: true });
  writeFileSync(path.join(source.dataDir, 'uploads', 'test', 'image.png'), 'not really a png');
}, 90_000);

afterAll(() => cleanupServers({ removeTemp: true }));

describe('backup and restore of the embedded database', () => {
  const archive = () => path.join(root, 'backup.tar.gz');
  let backupStartedAt = 0;
  let stopSeenAt = 0;

  it('backs up online while contacts are being written: one .tar.gz, result line on stdout, progress on stderr', { timeout: 40_000 }, async () => {
    // One writer, one request at a time, for as long as the backup runs (bounded: 2,000 requests, 30 s).
    let stop = false;
    const loop = (async () => {
      for (let i = 0; i < 2000 && !stop; i++) {
        const email = `during-${i}@example.com`;
        const res = await api(source.port, 'POST', '/contacts', { email }, bearer());
        expect(res.status, JSON.stringify(res.json)).toBe(201);
        written.push({ email, ackedAt: Date.now() });
      }
    })();
    // Checkpoints during the copy, as checkpoint_timeout brings on a long backup: the restore must
    // replay from the backup's start (backup_label), not from the latest checkpoint in pg_control.
    const checkpoints = (async () => {
      const client = new pg.Client({ connectionString: readFileSync(path.join(source.dataDir, 'postgres.url'), 'utf8') });
      await client.connect();
      try {
        for (let i = 0; i < 600 && !stop; i++) {
          await client.query('CHECKPOINT');
          await sleep(50);
        }
      } finally {
        await client.end();
      }
    })();
    const deadline = Date.now() + 30_000;
    while (written.length < 10 && Date.now() < deadline) await sleep(20);
    backupStartedAt = Date.now();
    let res: CliResult;
    try {
      res = await cli(['backup', '--file', archive()], source.dataDir, (line) => {
        if (line.startsWith('backup: files copied; ending the backup')) stopSeenAt = Date.now(); // printed just before pg_backup_stop
      });
    } finally {
      stop = true;
      await Promise.all([loop, checkpoints]);
    }
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(new RegExp(`^backup written: ${archive().replace(/[.]/g, '\\.')} \\(\\d+\\.\\d MB compressed, \\d+\\.\\d MB of files, \\d+\\.\\d s\\)\\n$`));
    expect(res.stderr).toContain(`using the embedded database in ${source.dataDir} (running server)`);
    expect(stopSeenAt).toBeGreaterThan(0);
    expect(written.some((w) => w.ackedAt > stopSeenAt), 'writes went on after the backup').toBe(true);
    expect(existsSync(`${archive()}.partial`)).toBe(false);
  });

  it('restores into a fresh DATA_DIR: every contact acknowledged before the backup ended is there, none half-written, and the instance works', { timeout: 60_000 }, async () => {
    const target = path.join(root, 'restored');
    const res = await cli(['restore', '--file', archive()], target);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^restored .+ into .+: backup of \S+, PostgreSQL 18\.\d+, schema at \d{4}_\w+ \(\d+\.\d s\)\n$/);
    // PostgreSQL recovered from the backup's start (backup_label) to its end, not from pg_control's checkpoint.
    expect(res.stderr).toMatch(/^restore: PostgreSQL replayed the backup's WAL from \S+ to \S+: consistent$/m);
    expect(embeddedPostgresRunning(target)).toBe(false); // started to check it, then stopped
    expect(readFileSync(path.join(target, 'uploads', 'test', 'image.png'), 'utf8')).toBe('not really a png');

    const server = startServer({ PORT: String(await freePort()), DATA_DIR: target });
    await server.waitForHealth(45_000);
    try {
      const rows = await query<{ email: string }>(target, "SELECT email FROM contacts WHERE email LIKE 'during-%' OR email LIKE 'before-%'");
      const present = new Set(rows.map((r) => r.email));
      for (let i = 0; i < 20; i++) expect(present.has(`before-${i}@example.com`)).toBe(true);
      // The writer was sequential: what the backup holds is exactly the first k writes, k at least
      // every write acknowledged before pg_backup_stop was called, at most one more than were acknowledged.
      const during = rows.filter((r) => r.email.startsWith('during-')).length;
      expect(during).toBeGreaterThanOrEqual(written.filter((w) => w.ackedAt < stopSeenAt).length);
      expect(during).toBeGreaterThanOrEqual(written.filter((w) => w.ackedAt < backupStartedAt).length);
      expect(during).toBeLessThanOrEqual(written.length + 1);
      for (let i = 0; i < during; i++) expect(present.has(`during-${i}@example.com`), `during-${i}`).toBe(true);

      // Consistent: every table counts, a new contact is written, and a new email is signed (the DKIM key
      // is sealed with the instance secret the backup carried) and sent.
      const tables = await query<{ name: string }>(target, "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'");
      for (const { name } of tables) await query(target, `SELECT count(*) FROM "${name}"`);
      expect((await api(server.port, 'POST', '/contacts', { email: 'after-restore@example.com' }, bearer())).status).toBe(201);
      await waitForSent(target, await sendOne(server.port, 'after-restore@example.com'));
    } finally {
      server.child.kill('SIGTERM');
    }
    expect(await server.waitForExit(20_000)).toEqual({ code: 0, signal: null });
  });

  it('refuses to restore while a server runs on the DATA_DIR, even with --force, and changes nothing', { timeout: 20_000 }, async () => {
    const before = readdirSync(source.dataDir).sort();
    const res = await cli(['restore', '--file', archive(), '--force'], source.dataDir);
    expectOneErrorLine(res, /^error: a PostgreSQL is running on .+ \(pid \d+\): stop the server before restoring$/);
    expect(readdirSync(source.dataDir).sort()).toEqual(before);
  });

  it('refuses a DATA_DIR that holds a database without --force; with --force moves it aside, whole', { timeout: 40_000 }, async () => {
    const target = path.join(root, 'restored');
    const refused = await cli(['restore', '--file', archive()], target);
    expectOneErrorLine(refused, /already holds a database \(postgres, postgres\.password, secret, uploads\): pass --force to move it aside into .+before-restore-/);

    const res = await cli(['restore', '--file', archive(), '--force'], target);
    expect(res.code, res.stderr).toBe(0);
    const aside = readdirSync(target).filter((n) => n.startsWith('before-restore-'));
    expect(aside).toHaveLength(1);
    expect(readdirSync(path.join(target, aside[0] ?? '')).sort()).toEqual(['postgres', 'postgres.password', 'secret', 'uploads']);
    expect(existsSync(path.join(target, aside[0] ?? '', 'postgres', 'PG_VERSION'))).toBe(true);
    expect(res.stderr).toContain(`moved the previous postgres, postgres.password, secret, uploads into ${path.join(target, aside[0] ?? '')}`);
  });

  it('refuses a corrupt archive (a changed byte: checksum mismatch; damaged compression) and writes nothing', { timeout: 30_000 }, async () => {
    const tar = gunzipSync(readFileSync(archive()));
    const at = tar.indexOf('not really a png');
    tar[at] = 'N'.charCodeAt(0);
    const changed = path.join(root, 'changed.tar.gz');
    writeFileSync(changed, gzipSync(tar));
    const target = path.join(root, 'corrupt');
    expectOneErrorLine(await cli(['restore', '--file', changed], target), /^error: corrupt backup: checksum mismatch for uploads\/test\/image\.png$/);
    expect(readdirSync(target)).toEqual([]);

    const gz = readFileSync(archive());
    const damaged = path.join(root, 'damaged.tar.gz');
    writeFileSync(damaged, gz.subarray(0, Math.floor(gz.length / 2)));
    expectOneErrorLine(await cli(['restore', '--file', damaged], target), /^error: corrupt backup: /);
    expect(readdirSync(target)).toEqual([]);
  });

  it('refuses a backup of another PostgreSQL major version before unpacking it', { timeout: 20_000 }, async () => {
    const tar = gunzipSync(readFileSync(archive()));
    const text = tar.toString('latin1');
    const num = /"versionNum": (\d+)/.exec(text);
    if (!num?.[1]) throw new Error('no versionNum in the header');
    // Same length, so the tar header stays valid; the checksums are not reached.
    const other = text
      .replace(`"versionNum": ${num[1]}`, `"versionNum": ${String(170000 + (Number(num[1]) % 10000)).padStart(num[1].length, '0')}`)
      .replace('"version": "18.', '"version": "17.');
    const file = path.join(root, 'pg17.tar.gz');
    writeFileSync(file, gzipSync(Buffer.from(other, 'latin1')));
    const target = path.join(root, 'other-major');
    expectOneErrorLine(await cli(['restore', '--file', file], target), /^error: the backup is of PostgreSQL 17\.\d+ \(major 17\); this installation runs PostgreSQL 18: restore it with a release of ours that embeds PostgreSQL 17, then upgrade$/);
    expect(readdirSync(target)).toEqual([]);
  });

  it('backup with DATABASE_URL says to use the PostgreSQL tools and exits 1; an existing file is never overwritten', { timeout: 20_000 }, async () => {
    const res = await runCli(['backup', '--file', path.join(root, 'x.tar.gz')], { dataDir: source.dataDir, env: { SECRET: undefined, DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db' } });
    expectOneErrorLine(res, /^error: DATABASE_URL is set: backup covers the embedded database only; use your PostgreSQL's own tools \(pg_dump/);
    expect(existsSync(path.join(root, 'x.tar.gz'))).toBe(false);
    const before = readFileSync(archive());
    expectOneErrorLine(await cli(['backup', '--file', archive()], source.dataDir), /already exists: choose a new file name$/);
    expect(readFileSync(archive()).equals(before)).toBe(true);
  });

  it('backs up a stopped DATA_DIR by starting its PostgreSQL for the command, and stops it after', { timeout: 30_000 }, async () => {
    const stopped = path.join(root, 'restored');
    expect(embeddedPostgresRunning(stopped)).toBe(false);
    const res = await cli(['backup', '--file', path.join(root, 'cold.tar.gz')], stopped);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(`using the embedded database in ${stopped} (started for this command)`);
    expect(res.stdout).toMatch(/^backup written: /);
    expect(embeddedPostgresRunning(stopped)).toBe(false);
  });
});
