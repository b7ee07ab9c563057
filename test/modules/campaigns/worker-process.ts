import { sql } from 'kysely';
import { expect } from 'vitest';
import { TEST_SECRET } from '../../helpers/app.js';
import { type ServerProcess, startServer } from '../../helpers/process.js';
import type { SendTestApp } from '../emails/helpers.js';

/** Real `ROLE=worker` processes on a send test app's database, for SIGKILL tests. */

const WORKER_READY = /^ready: worker running$/;
const WORKER_CONNECTED = /^Worker connected and looking for jobs/;

/** A `src/server.ts` child with ROLE=worker on `t`'s database, delivering to `smtpUrl`, once it looks for jobs. */
export async function startReadyWorker(t: SendTestApp, smtpUrl: string): Promise<ServerProcess> {
  const worker = startServer({
    ROLE: 'worker',
    DATABASE_URL: t.config.databaseUrl,
    SMTP_URL: smtpUrl,
    // The DKIM keys were sealed (and unsubscribe tokens are signed) with the in-process app's secret.
    SECRET: TEST_SECRET,
    LOG_LEVEL: 'info',
  });
  await worker.waitForLog(WORKER_READY, 30_000);
  await worker.waitForLog(WORKER_CONNECTED, 10_000);
  return worker;
}

/** SIGKILL: no graceful stop, jobs and SMTP transactions are cut wherever they are. */
export async function killHard(worker: ServerProcess): Promise<void> {
  worker.child.kill('SIGKILL');
  expect(await worker.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
}

/**
 * Releases the job locks of a killed worker (found by its pid in worker_heartbeats): what the
 * liveness check (src/jobs/liveness.ts, tested in worker-crash.test.ts) does 30–45 s later,
 * done now so these tests need not wait for it. Other workers' locks are left alone.
 */
export async function releaseKilledWorker(t: SendTestApp, killed: ServerProcess): Promise<string[]> {
  const { rows } = await sql<{ ids: string[] | null }>`
    SELECT array_agg(worker_id) AS ids FROM worker_heartbeats WHERE pid = ${killed.child.pid ?? -1}`.execute(t.db.db);
  const ids = rows[0]?.ids ?? [];
  expect(ids.length, 'the killed worker had recorded no heartbeat').toBeGreaterThan(0);
  await sql`SELECT graphile_worker.force_unlock_workers(${ids}::text[])`.execute(t.db.db);
  return ids;
}

/** Polls until the campaign is SENT. */
export async function waitForCampaignSent(t: SendTestApp, campaignId: string, timeoutMs: number, why: () => Promise<string>) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', campaignId).executeTakeFirstOrThrow();
    if (row.status === 'SENT') return row;
    if (Date.now() > deadline) throw new Error(`campaign still ${row.status} after ${timeoutMs} ms\n${await why()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
