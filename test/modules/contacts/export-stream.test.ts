import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDeps } from '../../../src/app-deps.js';
import { contactExportRoutes } from '../../../src/modules/contacts/export.routes.js';
import { openExportCursor } from '../../../src/modules/contacts/export.repo.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, testConfig, type TestApp } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { readCsv } from './export-helpers.js';

/**
 * Exports over a real socket: batches, the snapshot under concurrent writes, backpressure, a
 * client that goes away or stalls, and the limits. Each test's own project; the app's own pool.
 */
let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await createTestApp({
    extend: (app, db) => {
      const deps = createAppDeps(testConfig(), db.db);
      void app.register(contactExportRoutes, { ...deps, prefix: '/one-per-project', exportLimits: { perProject: 1 } });
      void app.register(contactExportRoutes, { ...deps, prefix: '/one-per-process', exportLimits: { perProcess: 1 } });
      void app.register(contactExportRoutes, { ...deps, prefix: '/stall', exportLimits: { stallMs: 400 } });
    },
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await t?.close();
});

/**
 * `n` contacts of ~500 bytes each, ~10 MB of CSV at 20,000: created newest first (the table's
 * order is not the export's), three per millisecond (ties ordered by id).
 */
async function seedMany(projectId: string, n: number): Promise<void> {
  await sql`INSERT INTO contacts (project_id, email, subscribed, data, created_at)
    SELECT ${projectId}::uuid, 'seed' || lpad(i::text, 6, '0') || '@example.com', i % 10 <> 0,
           jsonb_build_object('i', i, 'pad', repeat('x', 400)), timestamptz '2026-01-01 00:00:00Z' + ((${n}::int - i) / 3) * interval '1 millisecond'
    FROM generate_series(1, ${n}::int) i`.execute(t.db.db);
}

/** A GET whose answer is not read until the caller resumes it (the client's side of backpressure). */
function openExport(project: TestProject, path = '/contacts/export', query = ''): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: `${path}${query}`, agent: false, headers: { authorization: `Bearer ${project.secret}` } }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
  });
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const poolBusy = () => t.db.pool.totalCount - t.db.pool.idleCount;
/** Export transactions waiting on their client (any test file's): none once every export is over. */
const exportsInTransaction = async () =>
  Number(
    (
      await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'FETCH FORWARD % FROM contacts_export' AND state LIKE 'idle in transaction%'`.execute(t.db.db)
    ).rows[0]?.n,
  );

describe('GET /contacts/export over a socket', () => {
  it('streams many batches in (createdAt, id) order, each contact once, from the snapshot it started with while contacts are written', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 20_000);
    const expected = (
      await sql<{ email: string }>`SELECT email FROM contacts WHERE project_id = ${project.id}::uuid ORDER BY created_at, id`.execute(t.db.db)
    ).rows.map((r) => r.email);

    const res = await openExport(project);
    expect(res.statusCode).toBe(200);
    // Written while the export runs (its headers are out: its snapshot is taken): new contacts
    // sorting before, among and after the exported ones, a changed one with a new key, a deleted one.
    await sql`INSERT INTO contacts (project_id, email, subscribed, data, created_at)
      SELECT ${project.id}::uuid, 'late' || i || '@example.com', true, '{"late": true}', timestamptz '2026-01-01 00:00:03Z' + (i - 500) * interval '10 milliseconds'
      FROM generate_series(1, 1000) i`.execute(t.db.db);
    await sql`UPDATE contacts SET data = data || '{"late": 1, "i": -1}' WHERE project_id = ${project.id}::uuid AND email = 'seed019999@example.com'`.execute(t.db.db);
    await sql`DELETE FROM contacts WHERE project_id = ${project.id}::uuid AND email = 'seed010000@example.com'`.execute(t.db.db);

    const records = readCsv(await readAll(res));
    expect(records[0]).toEqual(['email', 'subscribed', 'createdAt', 'i', 'pad']);
    const emails = records.slice(1).map((r) => r[0]);
    expect(emails).toHaveLength(20_000);
    expect(new Set(emails).size).toBe(20_000);
    expect(emails).toEqual(expected);
    expect(records.find((r) => r[0] === 'seed019999@example.com')?.[3]).toBe('19999');
    expect(records.find((r) => r[0] === 'seed000010@example.com')?.[1]).toBe('false');
    await until('the export connection back in the pool', () => poolBusy() === 0);
  });

  it('waits on a client that does not read (backpressure), and a client that goes away ends its transaction and returns the connection', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 20_000);
    for (let round = 0; round < 3; round++) {
      const res = await openExport(project, '/contacts/export', '?format=ndjson');
      expect(res.statusCode).toBe(200);
      // Nothing read: the export fetched what the socket took and waits, holding its transaction.
      await until('the export waiting on its client', async () => (await exportsInTransaction()) >= 1 && poolBusy() === 1);
      res.destroy();
      await until('the export transaction ended', async () => (await exportsInTransaction()) === 0 && poolBusy() === 0);
    }
    expect(t.db.pool.totalCount).toBeLessThanOrEqual(10);
  });

  it('cuts off a client that takes nothing for longer than the stall limit', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 20_000);
    const res = await openExport(project, '/stall/contacts/export');
    expect(res.statusCode).toBe(200);
    const cut = new Promise<boolean>((resolve) => res.once('close', () => resolve(res.complete)));
    await until('the stalled export cut off', () => poolBusy() === 0, { timeoutMs: 10_000 });
    res.resume();
    expect(await cut).toBe(false); // the answer ended without its final chunk
  });

  it('runs at most perProject exports of one project at once (429 before any byte), others unaffected', async () => {
    const { project } = await newProject(t.app);
    const other = (await newProject(t.app)).project;
    await seedMany(project.id, 20_000);
    const held = await openExport(project, '/one-per-project/contacts/export');
    expect(held.statusCode).toBe(200);

    const refused = await openExport(project, '/one-per-project/contacts/export');
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('30');
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(await readAll(refused)).error.code).toBe('RATE_LIMIT_EXCEEDED');
    const elsewhere = await openExport(other, '/one-per-project/contacts/export');
    expect(elsewhere.statusCode).toBe(200);
    await readAll(elsewhere);

    held.destroy();
    await until('the held export gone', () => poolBusy() === 0);
    const again = await openExport(project, '/one-per-project/contacts/export');
    expect(again.statusCode).toBe(200);
    expect(readCsv(await readAll(again))).toHaveLength(20_001);
  });

  it('runs at most perProcess exports in one process (503 with Retry-After)', async () => {
    const a = (await newProject(t.app)).project;
    const b = (await newProject(t.app)).project;
    await seedMany(a.id, 20_000);
    const held = await openExport(a, '/one-per-process/contacts/export');
    expect(held.statusCode).toBe(200);
    const refused = await openExport(b, '/one-per-process/contacts/export');
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('30');
    await readAll(refused);
    held.destroy();
    await until('the held export gone', () => poolBusy() === 0);
    const after = await openExport(b, '/one-per-process/contacts/export');
    expect(after.statusCode).toBe(200);
    await readAll(after);
  });
});

describe('openExportCursor', () => {
  it('cancels the statement running when the client goes away, and returns the connection', async () => {
    const { project } = await newProject(t.app);
    await seedMany(project.id, 10);
    const gone = new AbortController();
    const started = Date.now();
    const opening = openExportCursor(t.db.db, {
      projectId: project.id,
      // A key pass that would take 20 s.
      where: sql`(SELECT pg_sleep(20)) IS NOT NULL`,
      format: 'csv',
      maxKeys: 1000,
      slots: 2,
      idleTimeoutMs: 60_000,
      signal: gone.signal,
    });
    await until('the key pass running', async () =>
      Number(
        (await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(20)%' AND pid <> pg_backend_pid()`.execute(t.db.db)).rows[0]?.n,
      ) === 1,
    );
    gone.abort();
    await expect(opening).rejects.toThrow(/cancel/);
    expect(Date.now() - started).toBeLessThan(10_000);
    await until('the connection back in the pool', () => poolBusy() === 0);
  });
});
