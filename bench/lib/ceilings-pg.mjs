// PostgreSQL ceilings of bench/ceilings.mjs: a throwaway embedded cluster (the project's own
// start-up code, so as root it runs as the "postgres" user, however the clone's folders are
// closed), the project's schema (its migrations), and track-shaped writes from node-postgres
// clients of this process. The project's TypeScript modules are imported: the caller registers tsx.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import pg from 'pg';
import { createWindow, ownCpu, postgresCpuBelow } from './ceilings-common.mjs';
import { performance } from 'node:perf_hooks';

const EVENTS = ['page.viewed', 'signed_up', 'order.paid'];
const PLANS = ['free', 'pro', 'team'];
/** Distinct emails, as bench/track.mjs: consecutive calls hit different contacts, every call updates its contact. */
const EMAILS = 10_000;

/** The data of the n-th track call: the same shape as bench/track.mjs sends. */
const dataOf = (n) => ({ plan: PLANS[n % PLANS.length], visits: n, source: 'bench', order: { value: `o-${n}`, persistent: false } });

const UPSERT_ONE = `
  INSERT INTO contacts (project_id, email, subscribed, data) VALUES ($1, $2, true, $3::jsonb)
  ON CONFLICT (project_id, email) DO UPDATE SET data = contacts.data || EXCLUDED.data, updated_at = now()
  RETURNING id`;
const INSERT_ONE = `INSERT INTO events (project_id, contact_id, name, data) VALUES ($1, $2, $3, $4::jsonb) RETURNING id, created_at`;

// Set-based: one statement upserts the batch's contacts, one inserts its events (unnest arrays).
const UPSERT_MANY = `
  INSERT INTO contacts (project_id, email, subscribed, data)
  SELECT $1, t.email, true, t.data FROM unnest($2::text[], $3::jsonb[]) AS t(email, data)
  ON CONFLICT (project_id, email) DO UPDATE SET data = contacts.data || EXCLUDED.data, updated_at = now()
  RETURNING id, email`;
const INSERT_MANY = `
  INSERT INTO events (project_id, contact_id, name, data)
  SELECT $1, t.contact_id, t.name, t.data FROM unnest($2::uuid[], $3::text[], $4::jsonb[]) AS t(contact_id, name, data)
  RETURNING id, created_at`;

/**
 * Starts the cluster in a temp folder and migrates it. Returns `{ url, projectId, run(spec), close() }`;
 * `close` stops PostgreSQL and removes the folder (also called when the start fails half-way).
 */
export async function startPostgresStage(log) {
  const { startEmbeddedPostgres } = await import('../../src/db/embedded.ts');
  const { connect } = await import('../../src/db/connection.ts');
  const { migrateToLatest } = await import('../../src/db/migrate.ts');
  const tmp = mkdtempSync(path.join(tmpdir(), 'bench-ceilings-pg-'));
  chmodSync(tmp, 0o755);
  let embedded;
  const close = async () => {
    try {
      await embedded?.stop();
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  };
  try {
    const t0 = performance.now();
    embedded = await startEmbeddedPostgres({ dir: path.join(tmp, 'postgres') });
    const db = connect(embedded.url, { max: 2 });
    try {
      await migrateToLatest(db.db, db.pool);
    } finally {
      await db.close();
    }
    const client = new pg.Client({ connectionString: embedded.url });
    await client.connect();
    const { rows } = await client.query(
      `INSERT INTO projects (name, public_key, secret_key, webhook_secret) VALUES ('ceilings', 'pk_ceilings', 'sk_ceilings', 'whsec_ceilings') RETURNING id`,
    );
    await client.end();
    log(`  PostgreSQL started and migrated in ${((performance.now() - t0) / 1000).toFixed(1)} s (${tmp})`);
    return { url: embedded.url, projectId: rows[0].id, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * `clients` connections, each running transactions of `perTx` track calls back to back for the
 * window: 1 = BEGIN, contact upsert, event insert, COMMIT (named prepared statements); more =
 * the same four round trips with the set-based statements. Calls are numbered across clients as
 * bench/track.mjs numbers requests, so a transaction's contacts are distinct from the others'.
 */
export async function measureTracks(stage, { clients, perTx, seconds }) {
  const conns = await Promise.all(Array.from({ length: clients }, async () => {
    const c = new pg.Client({ connectionString: stage.url });
    // A connection ended under it (PostgreSQL stopping on Ctrl-C) fails its query; no crash.
    c.on('error', () => undefined);
    await c.connect();
    return c;
  }));
  let next = 0;
  const window = createWindow(seconds);
  const one = async (c) => {
    const n = next++;
    const started = performance.now();
    await c.query('BEGIN');
    try {
      const { rows } = await c.query({ name: 'upsert-one', text: UPSERT_ONE, values: [stage.projectId, `user${n % EMAILS}@example.com`, JSON.stringify(dataOf(n))] });
      await c.query({ name: 'insert-one', text: INSERT_ONE, values: [stage.projectId, rows[0].id, EVENTS[n % EVENTS.length], JSON.stringify(dataOf(n))] });
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    }
    window.done(started);
  };
  const many = async (c) => {
    const first = next;
    next += perTx;
    const ns = Array.from({ length: perTx }, (_, i) => first + i);
    const emails = ns.map((n) => `user${n % EMAILS}@example.com`);
    const data = ns.map((n) => JSON.stringify(dataOf(n)));
    const started = performance.now();
    await c.query('BEGIN');
    try {
      const { rows } = await c.query({ name: 'upsert-many', text: UPSERT_MANY, values: [stage.projectId, emails, data] });
      const ids = new Map(rows.map((r) => [r.email, r.id]));
      await c.query({
        name: 'insert-many',
        text: INSERT_MANY,
        values: [stage.projectId, emails.map((e) => ids.get(e)), ns.map((n) => EVENTS[n % EVENTS.length]), data],
      });
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK');
      throw err;
    }
    window.done(started, perTx);
  };
  const step = perTx === 1 ? one : many;
  const loops = Promise.all(
    conns.map(async (c) => {
      while (window.open()) await step(c);
    }),
  );
  loops.catch(() => undefined); // awaited below; a failure before then must not be unhandled
  await window.untilStart();
  const cpu0 = { pg: postgresCpuBelow(process.pid), node: ownCpu() };
  await window.untilEnd();
  const cpu1 = { pg: postgresCpuBelow(process.pid), node: ownCpu() };
  try {
    await loops;
  } finally {
    await Promise.all(conns.map((c) => c.end().catch(() => undefined)));
  }
  const r = window.result();
  return {
    perSecond: r.perSecond,
    p50Ms: r.p50,
    p99Ms: r.p99,
    cpu: { postgres: cpu1.pg - cpu0.pg, client: cpu1.node - cpu0.node },
    transactions: perTx === 1 ? r.count : r.count / perTx,
  };
}
