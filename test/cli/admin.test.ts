import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INSTANCE_PROJECT_ID } from '../../src/db/schema.js';
import { createProject, signUp, uniqueEmail } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { expectOneErrorLine, runCli as runCliIn } from '../helpers/cli.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let t: TestApp;
let dataDir: string;

/** The real CLI against the test database, with this file's DATA_DIR. */
const runCli = (args: string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}) =>
  runCliIn(args, { dataDir, ...opts });

/** The value of a `label: value` line. */
function field(output: string, label: string): string {
  const match = new RegExp(`^${label}:\\s+(.+)$`, 'm').exec(output);
  if (!match?.[1]) throw new Error(`no "${label}" line in:\n${output}`);
  return match[1].trim();
}

async function login(email: string, password: string) {
  return t.app.inject({ method: 'POST', url: '/auth/login', payload: { email, password } });
}

async function cliUser(opts: { admin?: boolean } = {}) {
  const email = uniqueEmail('cli');
  const password = `pw-${randomUUID()}`;
  const res = await runCli(['create-user', '--email', email, '--password', password, ...(opts.admin ? ['--admin'] : [])]);
  expect(res.code, res.stderr).toBe(0);
  return { email, password, res };
}

async function cliProject(email: string, name: string) {
  const res = await runCli(['create-project', '--email', email, '--name', name]);
  expect(res.code, res.stderr).toBe(0);
  return { id: field(res.stdout, 'project id'), pk: field(res.stdout, 'public key'), sk: field(res.stdout, 'secret key'), res };
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'mailplatform-cli-'));
  // A secret-key route, to see the keys the CLI prints authenticate (and stop when disabled).
  t = await createTestApp({ extend: (app) => app.get('/test/cli/whoami', async (request) => ({ projectId: request.project?.id })) });
});
afterAll(async () => {
  await t.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('admin CLI: users', () => {
  it('creates a user who can log in, printing the id and email but never the password', async () => {
    const { email, password, res } = await cliUser();
    const id = field(res.stdout, 'user id');
    expect(id).toMatch(UUID);
    expect(field(res.stdout, 'email')).toBe(email.toLowerCase());
    expect(res.stdout + res.stderr).not.toContain(password);

    const ok = await login(email, password);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ id, email: email.toLowerCase() });
    const row = await t.db.db.selectFrom('users').select('password_hash').where('id', '=', id).executeTakeFirstOrThrow();
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
  });

  it('makes an admin with --admin, and a plain user without it once the instance has users', async () => {
    const admin = await cliUser({ admin: true });
    expect(field(admin.res.stdout, 'admin')).toBe('yes');
    const plain = await cliUser();
    expect(field(plain.res.stdout, 'admin')).toBe('no');
    const rows = await t.db.db
      .selectFrom('users')
      .select(['email', 'is_admin'])
      .where('email', 'in', [admin.email.toLowerCase(), plain.email.toLowerCase()])
      .execute();
    expect(Object.fromEntries(rows.map((r) => [r.email, r.is_admin]))).toEqual({
      [admin.email.toLowerCase()]: true,
      [plain.email.toLowerCase()]: false,
    });
  });

  it('reads the password from stdin with --password -', async () => {
    const email = uniqueEmail('cli-stdin');
    const password = `stdin-${randomUUID()}`;
    const res = await runCli(['create-user', '--email', email, '--password', '-'], { input: `${password}\n` });
    expect(res.code, res.stderr).toBe(0);
    expect((await login(email, password)).statusCode).toBe(200);
  });

  it('refuses a duplicate email (any case) with exit 1 and one error line', async () => {
    const { email } = await signUp(t.app);
    const res = await runCli(['create-user', '--email', email.toUpperCase(), '--password', 'another-password']);
    expectOneErrorLine(res, /already exists/);
  });

  it('refuses a bad email or a short password with one error line, never echoing the password', async () => {
    const short = await runCli(['create-user', '--email', uniqueEmail(), '--password', 'seven77']);
    expectOneErrorLine(short, /--password: .*at least 8 characters/);
    expect(short.stderr).not.toContain('seven77');
    const bad = await runCli(['create-user', '--email', 'not-an-email', '--password', 'long-enough']);
    expectOneErrorLine(bad, /--email: /);
  });

  it('resets a password: the old one stops working, the new one works', async () => {
    const { email, password } = await signUp(t.app);
    const next = `new-${randomUUID()}`;
    const res = await runCli(['reset-password', '--email', email, '--password', next]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain(email.toLowerCase());
    expect(res.stdout + res.stderr).not.toContain(next);
    expect((await login(email, password)).statusCode).toBe(401);
    expect((await login(email, next)).statusCode).toBe(200);
  });

  it('refuses to reset the password of an unknown email, or to a short one', async () => {
    expectOneErrorLine(await runCli(['reset-password', '--email', uniqueEmail(), '--password', 'long-enough']), /no user with email/);
    const { email, password } = await signUp(t.app);
    expectOneErrorLine(await runCli(['reset-password', '--email', email, '--password', 'short']), /at least 8 characters/);
    expect((await login(email, password)).statusCode).toBe(200);
  });
});

describe('admin CLI: projects', () => {
  it('creates a project whose printed keys are the ones the app holds and accepts', async () => {
    const owner = await signUp(t.app);
    const name = `CLI project ${randomUUID()}`;
    const { id, pk, sk, res } = await cliProject(owner.email, name);
    expect(id).toMatch(UUID);
    expect(pk).toMatch(/^pk_[0-9A-Za-z]{32,}$/);
    expect(sk).toMatch(/^sk_[0-9A-Za-z]{32,}$/);
    expect(field(res.stdout, 'name')).toBe(name);

    const mine = await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: { cookie: owner.cookie } });
    expect(mine.json()).toEqual([expect.objectContaining({ id, name, public: pk, secret: sk, role: 'OWNER', disabled: false })]);
    const whoami = await t.app.inject({ method: 'GET', url: '/test/cli/whoami', headers: { authorization: `Bearer ${sk}` } });
    expect(whoami.statusCode, whoami.body).toBe(200);
    expect(whoami.json()).toEqual({ projectId: id });
  });

  it('refuses a project for an unknown owner or with an empty name', async () => {
    expectOneErrorLine(await runCli(['create-project', '--email', uniqueEmail(), '--name', 'x']), /no user with email/);
    const owner = await signUp(t.app);
    expectOneErrorLine(await runCli(['create-project', '--email', owner.email, '--name', '   ']), /missing --name/);
  });

  it("prints a project's name and keys, and refuses an unknown id", async () => {
    const owner = await signUp(t.app);
    const project = await createProject(t.app, owner, 'Printed');
    const res = await runCli(['print-keys', '--project', project.id]);
    expect(res.code, res.stderr).toBe(0);
    expect(field(res.stdout, 'name')).toBe('Printed');
    expect(field(res.stdout, 'public key')).toBe(project.public);
    expect(field(res.stdout, 'secret key')).toBe(project.secret);
    expectOneErrorLine(await runCli(['print-keys', '--project', randomUUID()]), /no project with id/);
    expectOneErrorLine(await runCli(['print-keys', '--project', 'not-a-uuid']), /no project with id not-a-uuid/);
  });

  it('lists projects one per line with owners and state, optionally only those of one user', async () => {
    const owner = await signUp(t.app);
    const other = await signUp(t.app);
    const a = await createProject(t.app, owner, 'List A');
    const b = await createProject(t.app, owner, 'List\tB');
    const theirs = await createProject(t.app, other, 'List C');

    const mine = await runCli(['list-projects', '--email', owner.email]);
    expect(mine.code, mine.stderr).toBe(0);
    expect(mine.stdout.trimEnd().split('\n')).toEqual([
      `${a.id}\tList A\t${owner.email.toLowerCase()}\tenabled`,
      `${b.id}\tList B\t${owner.email.toLowerCase()}\tenabled`,
    ]);

    const all = await runCli(['list-projects']);
    expect(all.code, all.stderr).toBe(0);
    for (const p of [a, b, theirs]) expect(all.stdout).toContain(`${p.id}\t`);

    expectOneErrorLine(await runCli(['list-projects', '--email', uniqueEmail()]), /no user with email/);
  });

  it('disables a project (its keys get 403 PROJECT_DISABLED) and enables it again', async () => {
    const owner = await signUp(t.app);
    const project = await createProject(t.app, owner, 'Toggled');
    const disabledFlag = async () =>
      (await t.db.db.selectFrom('projects').select('disabled').where('id', '=', project.id).executeTakeFirstOrThrow()).disabled;
    const call = () => t.app.inject({ method: 'GET', url: '/test/cli/whoami', headers: { authorization: `Bearer ${project.secret}` } });

    const off = await runCli(['disable-project', '--project', project.id]);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('disabled');
    expect(await disabledFlag()).toBe(true);
    const refused = await call();
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('PROJECT_DISABLED');
    const listed = await runCli(['list-projects', '--email', owner.email]);
    expect(listed.stdout).toMatch(/\tdisabled\n$/);

    const on = await runCli(['enable-project', '--project', project.id]);
    expect(on.code, on.stderr).toBe(0);
    expect(await disabledFlag()).toBe(false);
    expect((await call()).statusCode).toBe(200);

    expectOneErrorLine(await runCli(['disable-project', '--project', randomUUID()]), /no project with id/);
  });

  it("never shows the instance mail's row (migration 0039) as a project; its keys open nothing", async () => {
    const all = await runCli(['list-projects']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).not.toContain(INSTANCE_PROJECT_ID);
    for (const command of ['enable-project', 'disable-project']) {
      expectOneErrorLine(await runCli([command, '--project', INSTANCE_PROJECT_ID]), /no project with id/);
    }
    const row = await t.db.db.selectFrom('projects').selectAll().where('id', '=', INSTANCE_PROJECT_ID).executeTakeFirstOrThrow();
    expect(row.disabled).toBe(true);
    for (const key of [row.secret_key, row.public_key]) {
      const res = await t.app.inject({ method: 'GET', url: '/test/cli/whoami', headers: { authorization: `Bearer ${key}` } });
      expect(res.statusCode).toBeGreaterThanOrEqual(401);
      expect(res.statusCode).toBeLessThanOrEqual(403);
    }
  });
});

describe('admin CLI: usage and errors', () => {
  it('prints every command with help (exit 0) and one command with help <command>', async () => {
    const res = await runCli(['help']);
    expect(res.code).toBe(0);
    for (const name of ['create-user', 'create-project', 'print-keys', 'list-projects', 'reset-password', 'enable-project', 'disable-project']) {
      expect(res.stdout).toContain(name);
    }
    const one = await runCli(['help', 'create-project']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('create-project --email OWNER_EMAIL --name NAME');
  });

  it('answers an unknown command, an unknown flag or a stray argument with exit 2 and the usage', async () => {
    const unknown = await runCli(['make-coffee']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: unknown command "make-coffee"/);
    expect(unknown.stderr).toContain('create-user');

    const flag = await runCli(['print-keys', '--project', randomUUID(), '--verbose']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/^error: unknown flag --verbose/);
    expect(flag.stderr).toContain('print-keys --project PROJECT_ID');

    const stray = await runCli(['reset-password', '--email', 'a@example.com', '--password', 'two', 'words']);
    expect(stray.code).toBe(2);
    expect(stray.stderr).not.toContain('words');

    expect((await runCli([])).code).toBe(2);
  });

  it('names a missing flag before connecting to any database', async () => {
    // An unreachable database: the flag error must come first, and fast.
    const env = { DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none' };
    const res = await runCli(['create-user', '--email', uniqueEmail()], { env });
    expectOneErrorLine(res, /missing --password/);
    const noValue = await runCli(['create-user', '--email'], { env });
    expect(noValue.code).toBe(2);
    expect(noValue.stderr).toMatch(/^error: --email needs a value/);
  });

  it('reports an unreachable database as one error line', async () => {
    const res = await runCli(['list-projects'], { env: { DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none' } });
    expectOneErrorLine(res, /ECONNREFUSED|connect/i);
  });
});
