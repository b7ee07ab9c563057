import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connect } from '../../src/db/connection.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { uniqueEmail } from '../helpers/accounts.js';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { type CliResult, runCli } from '../helpers/cli.js';

// Which database the operator CLI opens: the server's, by the same DATA_DIR/DATABASE_URL rules,
// said on stderr, and never a new one.

let t: TestApp;
const temps: string[] = [];
const tempDir = (label: string) => {
  const dir = mkdtempSync(path.join(tmpdir(), `mailplatform-cli-${label}-`));
  temps.push(dir);
  return dir;
};

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => {
  await t.close();
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

const createUser = (env: Record<string, string | undefined>, dataDir: string) =>
  runCli(['create-user', '--email', uniqueEmail('cli-db'), '--password', 'long-enough'], { dataDir, env });

/** The refusal of a DATA_DIR without a database: exit 1, one error line, nothing opened. */
function expectNoDatabase(res: CliResult, dir: string): void {
  expect(res.code, res.stderr).toBe(1);
  expect(res.stdout).toBe('');
  expect(res.stderr).toBe(`error: no database in ${dir}: start the server once with \`npm start\` or pass DATA_DIR/DATABASE_URL\n`);
}

describe('admin CLI: which database', () => {
  it('says on stderr that it uses DATABASE_URL (host, port and database, never the password)', async () => {
    const url = new URL(inject('databaseUrl'));
    const res = await createUser({}, tempDir('url'));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe(`using DATABASE_URL ${url.hostname}:${url.port}${url.pathname}\n`);
    expect(res.stderr).not.toContain(decodeURIComponent(url.password));
  });

  it("uses a running instance's database from the URL file it leaves in DATA_DIR, and leaves that file", async () => {
    const dir = tempDir('running');
    writeFileSync(path.join(dir, 'postgres.url'), inject('databaseUrl'));
    const email = uniqueEmail('cli-running');
    const res = await runCli(['create-user', '--email', email, '--password', 'long-enough'], { dataDir: dir, env: { DATABASE_URL: undefined } });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe(`using the embedded database in ${dir} (running server)\n`);
    const row = await t.db.db.selectFrom('users').select('email').where('email', '=', email.toLowerCase()).executeTakeFirst();
    expect(row).toBeDefined();
    expect(readFileSync(path.join(dir, 'postgres.url'), 'utf8')).toBe(inject('databaseUrl'));
    expect(existsSync(path.join(dir, 'postgres'))).toBe(false); // no embedded database started
  });

  it('refuses a DATA_DIR that does not exist, and does not create it', async () => {
    const dir = path.join(tempDir('missing'), 'data');
    expectNoDatabase(await createUser({ DATABASE_URL: undefined, SECRET: undefined }, dir), dir);
    expect(existsSync(dir)).toBe(false);
  });

  it('refuses a DATA_DIR without a database (a stale URL file included) and leaves it as it was', async () => {
    const dir = tempDir('empty');
    // As a killed instance leaves it: nothing listens on port 1.
    writeFileSync(path.join(dir, 'postgres.url'), 'postgres://postgres:x@127.0.0.1:1/mailplatform');
    expectNoDatabase(await createUser({ DATABASE_URL: undefined, SECRET: undefined }, dir), dir);
    expect(readdirSync(dir)).toEqual(['postgres.url']); // no cluster, no generated secret
  });

  it('refuses a DATABASE_URL database the server never set up, creating no table in it', async () => {
    const name = `cli_empty_${randomUUID().replaceAll('-', '')}`;
    const admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(inject('databaseUrl'));
      url.pathname = `/${name}`;
      const res = await createUser({ DATABASE_URL: url.href }, tempDir('unset-up'));
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toBe(
        `error: DATABASE_URL ${url.hostname}:${url.port}/${name} has no mailplatform tables: start the server once on it (\`npm start\`)\n`,
      );
      const empty = new pg.Client({ connectionString: url.href });
      await empty.connect();
      const { rows } = await empty.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')");
      await empty.end();
      expect(rows[0]).toEqual({ n: 0 });
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  it("starts and stops the embedded database of a stopped server's DATA_DIR for the command", { timeout: 120_000 }, async () => {
    const dir = tempDir('stopped');
    // A server that ran once on this DATA_DIR and stopped: a migrated cluster, no URL file.
    const server = await startEmbeddedPostgres({ dir: path.join(dir, 'postgres') });
    const db = connect(server.url);
    await migrateToLatest(db.db, db.pool);
    await db.close();
    await server.stop();

    const env = { DATABASE_URL: undefined, SECRET: undefined };
    const created = await createUser(env, dir);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toBe(`using the embedded database in ${dir} (started for this command)\n`);
    expect(created.stdout).toMatch(/^admin:\s+yes$/m); // the first user of that instance
    expect(existsSync(path.join(dir, 'postgres', 'postmaster.pid'))).toBe(false); // stopped again
    expect(existsSync(path.join(dir, 'postgres.url'))).toBe(false);
  });
});
