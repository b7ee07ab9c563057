import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cleanupServers,
  embeddedPostgresRunning,
  freePort,
  makeTempRoot,
  sleep,
  startServer,
  type ServerProcess,
} from '../helpers/process.js';

afterEach(() => cleanupServers({ removeTemp: true }));

async function occupy(port: number): Promise<net.Server> {
  const blocker = net.createServer();
  await new Promise<void>((resolve, reject) => {
    blocker.once('error', reject);
    blocker.listen(port, '127.0.0.1', resolve);
  });
  return blocker;
}

/**
 * Exits non-zero, fast, with stderr being exactly one `error:` line matching `pattern`. "Fast"
 * tells a refusal from a hang (e.g. a recursive mkdir looping forever): these exits take 1-4 s
 * (node and tsx starting) on a loaded two-core machine; 30 s is far above that, a hang never ends.
 */
async function expectOneErrorLine(server: ServerProcess, pattern: RegExp, withinMs = 30_000): Promise<string> {
  const startedAt = Date.now();
  const exit = await server.waitForExit(withinMs);
  expect(Date.now() - startedAt).toBeLessThan(withinMs);
  expect(exit.signal).toBeNull();
  expect(exit.code).toBeGreaterThan(0);
  const lines = server.stderr().trimEnd().split('\n');
  expect(lines, server.stderr()).toHaveLength(1);
  const line = lines[0] ?? '';
  expect(line).toMatch(/^error: /);
  expect(line).toMatch(pattern);
  return line;
}

describe('server start-up failures a self-hoster can fix', () => {
  it('refuses a port in use with one error line naming the port, fast, before starting PostgreSQL', { timeout: 45_000 }, async () => {
    const port = await freePort();
    const blocker = await occupy(port);
    try {
      const server = startServer({ PORT: String(port) });
      const line = await expectOneErrorLine(server, new RegExp(`\\bport ${port}\\b`));
      expect(line).toMatch(/in use/);
      expect(existsSync(path.join(server.dataDir, 'postgres'))).toBe(false);
      expect(embeddedPostgresRunning(server.dataDir)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('names the port and stops its PostgreSQL when the port is taken while the database starts', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const server = startServer({ PORT: String(port) });
    // The port check passed once the database folder appears; take the port now.
    const pgDir = path.join(server.dataDir, 'postgres');
    const deadline = Date.now() + 30_000;
    while (!existsSync(pgDir)) {
      if (server.child.exitCode !== null || Date.now() > deadline) throw new Error(`no database folder\n${server.stderr()}`);
      await sleep(5);
    }
    const blocker = await occupy(port);
    try {
      await expectOneErrorLine(server, new RegExp(`127\\.0\\.0\\.1:${port}\\b`), 45_000);
      expect(embeddedPostgresRunning(server.dataDir)).toBe(false);
    } finally {
      blocker.close();
    }
  });

  it('refuses a DATA_DIR below a file with one error line naming DATA_DIR', { timeout: 45_000 }, async () => {
    const file = path.join(makeTempRoot(), 'a-file');
    writeFileSync(file, 'not a folder');
    const dataDir = path.join(file, 'data');
    const server = startServer({ PORT: String(await freePort()), DATA_DIR: dataDir });
    const line = await expectOneErrorLine(server, /DATA_DIR/);
    expect(line).toContain(dataDir);
    expect(line).toMatch(/not writable/);
  });

  it('refuses an unusable DATA_DIR also when SECRET is set (the database start is the first to touch it)', { timeout: 45_000 }, async () => {
    const file = path.join(makeTempRoot(), 'a-file');
    writeFileSync(file, 'not a folder');
    const dataDir = path.join(file, 'data');
    const server = startServer({ PORT: String(await freePort()), DATA_DIR: dataDir, SECRET: 'x'.repeat(40) });
    const line = await expectOneErrorLine(server, /DATA_DIR/);
    expect(line).toContain(dataDir);
  });

  // Node's recursive mkdirSync loops forever here (procfs answers ENOENT); ensureDataDir
  // creates folders one level at a time instead.
  it('refuses DATA_DIR=/proc/forbidden with one error line naming DATA_DIR', { timeout: 45_000 }, async () => {
    const server = startServer({ PORT: String(await freePort()), DATA_DIR: '/proc/forbidden' });
    const line = await expectOneErrorLine(server, /DATA_DIR/);
    expect(line).toContain('/proc/forbidden');
  });

  it('refuses an unreachable DATABASE_URL with one "cannot connect" line, without the password and without an embedded database', { timeout: 45_000 }, async () => {
    const closed = await freePort();
    const server = startServer({ PORT: String(await freePort()), DATABASE_URL: `postgres://u:secretpw@127.0.0.1:${closed}/db` });
    const line = await expectOneErrorLine(server, /cannot connect/);
    expect(line).toContain(`127.0.0.1:${closed}`);
    expect(line).not.toContain('secretpw');
    expect(existsSync(path.join(server.dataDir, 'postgres'))).toBe(false);
  });

  it('refuses PORT=abc with one error line naming PORT', { timeout: 45_000 }, async () => {
    const server = startServer({ PORT: 'abc' });
    const line = await expectOneErrorLine(server, /\bPORT\b/);
    expect(line).toContain('abc');
    expect(existsSync(path.join(server.dataDir, 'postgres'))).toBe(false);
  });
});
