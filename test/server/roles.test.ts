import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOwnDatabase, type OwnDatabase } from '../helpers/database.js';
import { cleanupServers, freePort, sleep, startServer } from '../helpers/process.js';

const WORKER_LINE = /^Worker connected and looking for jobs/;

/**
 * A database of its own on the shared test server: the spawned worker must not take
 * jobs that other test files enqueue, and the server's own migrations run on it.
 */
let databaseUrl = '';
let own: OwnDatabase | undefined;

beforeAll(async () => {
  own = await createOwnDatabase('server_roles');
  databaseUrl = own.url;
});
afterEach(() => cleanupServers());
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await own?.drop();
});

async function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(2000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

describe('server with DATABASE_URL', () => {
  it('ROLE=api serves /health with no embedded database and no worker, and exits 0 on SIGTERM', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const server = startServer({ PORT: String(port), DATABASE_URL: databaseUrl, ROLE: 'api' });
    expect(await server.waitForHealth(30_000)).toEqual({ status: 'ok' });
    await server.waitForLog(/^ready: API on /, 5000);
    // A worker would have been started before the API listened (src/server.ts) and says so once
    // its LISTEN connection opens (milliseconds on loopback). No state proves its absence: 1.5 s,
    // beyond its 1 s poll interval too, is ample, and a stalled machine can only make this pass
    // wrongly, never fail. The check after the exit below covers the process's whole life.
    await sleep(1500);

    server.child.kill('SIGTERM');
    expect(await server.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(server.logMessages().filter((m) => WORKER_LINE.test(m))).toEqual([]);
    expect(server.stdout()).not.toContain('"component":"worker"');
    expect(existsSync(path.join(server.dataDir, 'postgres'))).toBe(false);
    expect(existsSync(path.join(server.dataDir, 'postgres.url'))).toBe(false);
  });

  it('ROLE=worker runs the job worker, does not listen on PORT, and exits 0 on SIGTERM', { timeout: 60_000 }, async () => {
    const port = await freePort();
    const server = startServer({ PORT: String(port), DATABASE_URL: databaseUrl, ROLE: 'worker' });
    await server.waitForLog(/^ready: worker running$/, 30_000);
    await server.waitForLog(WORKER_LINE, 10_000);
    expect(await connectionRefused(port)).toBe(true);

    server.child.kill('SIGTERM');
    expect(await server.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(server.logMessages()).toContain('stopped');
    expect(existsSync(path.join(server.dataDir, 'postgres'))).toBe(false);
  });
});
