import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { connect } from '../../src/db/connection.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/**
 * A PostgreSQL server of the fuzz file's own, with autovacuum off: the write check reads the
 * cluster-wide transaction counter (pg_current_snapshot), which the other test files (on the
 * shared server) and autoanalyze (it writes pg_statistic under a transaction id) would move.
 */
export interface FuzzCluster {
  url: string;
  /** A connection of its own for the write check (never the app's pool). */
  probe: pg.Client;
  /** Folder for DATA_DIR (uploads). */
  dataDir: string;
  stop(): Promise<void>;
}

export async function startFuzzCluster(): Promise<FuzzCluster> {
  const root = mkdtempSync(path.join(tmpdir(), 'mailplatform-fuzz-'));
  const server = await startEmbeddedPostgres({ dir: path.join(root, 'postgres') });
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query('ALTER SYSTEM SET autovacuum = off');
  // Nothing here needs to survive a crash: commits without waiting for the disk.
  await admin.query('ALTER SYSTEM SET synchronous_commit = off');
  await admin.query('ALTER SYSTEM SET fsync = off');
  await admin.query('SELECT pg_reload_conf()');
  await admin.end();
  const { db, pool, close } = connect(server.url);
  await migrateToLatest(db, pool);
  await close();
  const probe = new pg.Client({ connectionString: server.url });
  await probe.connect();
  return {
    url: server.url,
    probe,
    dataDir: path.join(root, 'data'),
    async stop() {
      await probe.end();
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** pg_current_snapshot(): xmax is one past the newest finished transaction that had an id; xip those still running. */
export interface Snapshot {
  xmax: bigint;
  xip: bigint[];
}

export async function snapshot(probe: pg.Client): Promise<Snapshot> {
  const { rows } = await probe.query<{ s: string }>('SELECT pg_current_snapshot()::text AS s');
  const [, xmax = '0', xip = ''] = (rows[0]?.s ?? '').split(':');
  return { xmax: BigInt(xmax), xip: xip ? xip.split(',').map(BigInt) : [] };
}

/**
 * Transaction ids committed since `before`. Every write takes an id; a transaction that only
 * reads takes none, and one rolled back is `aborted`. Waits (bounded) for transactions still
 * running that started after `before`.
 */
export async function committedSince(probe: pg.Client, before: Snapshot): Promise<bigint[]> {
  let after = await snapshot(probe);
  for (let i = 0; i < 100 && after.xip.some((x) => x >= before.xmax); i++) {
    await new Promise((r) => setTimeout(r, 20));
    after = await snapshot(probe);
  }
  if (after.xmax <= before.xmax && !before.xip.length) return [];
  const candidates = [...before.xip];
  for (let x = before.xmax; x < after.xmax; x++) candidates.push(x);
  const { rows } = await probe.query<{ x: string }>(
    `SELECT x::text FROM unnest($1::text[]) AS x WHERE pg_xact_status(x::xid8) = 'committed'`,
    [candidates.map(String)],
  );
  return rows.map((r) => BigInt(r.x));
}
