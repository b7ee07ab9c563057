import { readdirSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Campaign, CampaignStats } from '../../../src/modules/campaigns/campaigns.schema.js';
import { DEAD_AFTER_SECONDS, REAP_EVERY_MS } from '../../../src/jobs/liveness.js';
import { UNCONFIRMED_NOTE } from '../../../src/modules/emails/index.js';
import { SMTP_POOL_DEFAULTS } from '../../../src/mail/transports/smtp.js';
import { STATUS_EVENT } from '../../../src/modules/emails/status.js';
import { TEST_SECRET } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { cleanupServers, isAlive, type ServerProcess, sleep, startServer } from '../../helpers/process.js';
import { type SinkMessage, type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';
import { createSendTestApp, type SendTestApp } from '../emails/helpers.js';
import { api, createCampaign, emailsOf, seedContacts, type Sender, sender, waitForNoEmailJobs } from './helpers.js';

/**
 * A worker process killed with SIGKILL in the middle of a campaign (docs/sending.md "Exactly
 * once", docs/campaigns.md "Completion: never stuck in SENDING"): no recipient gets the
 * campaign twice, and once a worker runs again the campaign reaches SENT with every email
 * accounted for (delivered, or SENT `unconfirmed` for an attempt cut after its final dot; one cut
 * before it is sent again: end-of-data-crash.test.ts).
 *
 * Real processes: the workers are `src/server.ts` children (ROLE=worker) on a database of this
 * file's own, delivering to a loopback SMTP sink; the API runs in-process on the same database
 * (it never runs jobs: no worker is started in this process).
 */

/** Recipients: enough that a throttled worker needs several seconds for them. */
const N = 400;
/** Emails per second per project for the first worker (SMTP_URL `projectRate`): ~N / RATE seconds. */
const RATE = 80;
/** The first worker is killed once the sink has this many messages (past the first second's burst). */
const KILL_AFTER = 120;
/**
 * How long a worker that runs again may take to finish the campaign: the dead worker's jobs are
 * released once it has been silent DEAD_AFTER_SECONDS (checked every REAP_EVERY_MS), the rest of
 * the campaign unthrottled takes about a second, and the completion check looks every 3 s.
 */
const RECOVERY_MS = DEAD_AFTER_SECONDS * 1000 + REAP_EVERY_MS + 15_000;

const WORKER_READY = /^ready: worker running$/;
const WORKER_CONNECTED = /^Worker connected and looking for jobs/;

let sink: SmtpSink;
let t: SendTestApp;

beforeAll(async () => {
  sink = await startSmtpSink({ keepRaw: false });
  t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
});
// Each test's workers end with it: a worker left running would take the next test's jobs.
afterEach(() => cleanupServers());
afterAll(async () => {
  await cleanupServers({ removeTemp: true });
  await t?.close();
  await sink?.close();
});

/** Linux: the pids whose parent is `pid`, recursively (empty where /proc is unavailable). */
function descendants(pid: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const children = new Map<number, number[]>();
  for (const e of entries) {
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces and parentheses.
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(e)]);
    } catch {
      // exited meanwhile
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      found.push(c);
      walk(c);
    }
  };
  walk(pid);
  return found;
}

function startWorkerProcess(smtpUrl: string): ServerProcess {
  return startServer({
    ROLE: 'worker',
    DATABASE_URL: t.config.databaseUrl,
    SMTP_URL: smtpUrl,
    // The DKIM keys were sealed (and unsubscribe tokens are signed) with the in-process app's secret.
    SECRET: TEST_SECRET,
    LOG_LEVEL: 'info',
  });
}

async function startReadyWorker(smtpUrl: string): Promise<ServerProcess> {
  const worker = startWorkerProcess(smtpUrl);
  await worker.waitForLog(WORKER_READY, 30_000);
  await worker.waitForLog(WORKER_CONNECTED, 10_000);
  return worker;
}

/** SIGKILL, then proves nothing of it survives: the process and every process it had started. */
async function killHard(worker: ServerProcess): Promise<void> {
  const pid = worker.child.pid;
  if (pid === undefined) throw new Error('worker has no pid');
  const below = descendants(pid);
  worker.child.kill('SIGKILL');
  // startServer spawns node itself (no shell, no npx), so there is normally nothing below it;
  // anything there would be orphaned by the SIGKILL: kill it by pid too.
  for (const p of below) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  expect(await worker.waitForExit(10_000)).toEqual({ code: null, signal: 'SIGKILL' });
  for (let i = 0; i < 50 && below.some(isAlive); i++) await sleep(100);
  expect(below.filter(isAlive), 'processes left behind by the killed worker').toEqual([]);
  expect(isAlive(pid)).toBe(false);
}

/** The campaign's emails by status, and every job of this file's database, for failure messages. */
async function diagnose(campaignId: string): Promise<string> {
  const { rows: statuses } = await sql<{ status: string; note: boolean; n: number }>`
    SELECT status, error IS NOT NULL AS note, count(*)::int AS n FROM emails WHERE campaign_id = ${campaignId}
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(t.db.db);
  const { rows: jobs } = await sql<{ task: string; locked_by: string | null; locked_at: Date | null; attempts: number; run_at: Date; n: number }>`
    SELECT t.identifier AS task, j.locked_by, min(j.locked_at) AS locked_at, max(j.attempts)::int AS attempts,
           min(j.run_at) AS run_at, count(*)::int AS n
    FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(t.db.db);
  return `emails: ${JSON.stringify(statuses)}\njobs: ${JSON.stringify(jobs)}`;
}

async function waitForCampaignSent(campaignId: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', campaignId).executeTakeFirstOrThrow();
    if (row.status === 'SENT') return row;
    if (Date.now() > deadline) throw new Error(`campaign still ${row.status} ${timeoutMs} ms after a worker ran again\n${await diagnose(campaignId)}`);
    await sleep(100);
  }
}

interface Crashed {
  s: Sender;
  campaignId: string;
  contacts: { id: string; email: string }[];
  /** This campaign's messages in the sink so far. */
  ours(): SinkMessage[];
  /** Messages the sink had when the first worker was dead. */
  atKill: number;
  /** The killed worker's job locks on this campaign's jobs: its pool id(s) and the emails those jobs were delivering. */
  locks: { lockedBy: string; emailStatus: string | null }[];
}

/**
 * A campaign of N recipients sent while a throttled worker runs, that worker SIGKILLed once the
 * sink has KILL_AFTER of its messages. Returns with no worker running.
 */
async function killWorkerMidCampaign(): Promise<Crashed> {
  const s = await sender(t);
  const contacts = await seedContacts(t.db, s.project.id, N, { tag: `crash${Date.now()}-` });
  const addresses = new Set(contacts.map((x) => x.email));
  const ours = () => sink.messages.filter((m) => m.to.some((to) => addresses.has(to)));
  const c = await createCampaign(t, s);

  // A throttled worker: the campaign takes ~N / RATE seconds, so the kill lands mid-campaign.
  const first = await startReadyWorker(`${sink.url}?projectRate=${RATE}`);
  const res = await api(t.app, s.project, 'POST', `/campaigns/${c.id}/send`);
  expect(res.statusCode, res.body).toBe(200);
  const deadline = Date.now() + 30_000;
  while (ours().length < KILL_AFTER) {
    if (Date.now() > deadline) throw new Error(`only ${ours().length} of ${KILL_AFTER} messages before the kill\n${await diagnose(c.id)}`);
    await sleep(10);
  }

  // SIGKILL: no graceful stop; jobs and SMTP transactions are cut wherever they are.
  await killHard(first);
  // Its connections closed at the sink: the sink has read all it wrote (a final dot still in
  // flight at the kill included). With no worker running, nothing more can arrive before the next.
  await until('the killed worker gone from the sink', () => sink.openConnections() === 0);
  const atKill = ours().length;
  expect(atKill, 'the kill landed after the campaign had finished').toBeLessThan(N);
  const row = await t.db.db.selectFrom('campaigns').select('status').where('id', '=', c.id).executeTakeFirstOrThrow();
  expect(row.status).toBe('SENDING');

  const { rows: locks } = await sql<{ lockedBy: string; emailStatus: string | null }>`
    SELECT j.locked_by AS "lockedBy", e.status AS "emailStatus"
    FROM graphile_worker._private_jobs j LEFT JOIN emails e ON e.id::text = j.key
    WHERE j.locked_by IS NOT NULL AND (e.campaign_id = ${c.id} OR j.key LIKE ${`%:${c.id}`})`.execute(t.db.db);
  return { s, campaignId: c.id, contacts, ours, atKill, locks };
}

/** Every exactly-once property of a finished campaign, from the sink, the rows and the API. */
async function expectDeliveredExactlyOnce(x: Crashed): Promise<void> {
  const row = await t.db.db.selectFrom('campaigns').selectAll().where('id', '=', x.campaignId).executeTakeFirstOrThrow();
  expect(row.status).toBe('SENT');
  expect(row.sent_at).toBeInstanceOf(Date);
  expect(row.total_recipients).toBe(N);
  // Late deliveries would still be counted: wait until no send job of the campaign is left.
  await waitForNoEmailJobs(t, x.campaignId);

  // No recipient received the campaign twice; one recipient per message.
  const received = new Map<string, number>();
  for (const m of x.ours()) for (const to of m.to) received.set(to, (received.get(to) ?? 0) + 1);
  expect([...received].filter(([, n]) => n > 1), 'recipients that received the campaign more than once').toEqual([]);
  expect(x.ours().every((m) => m.to.length === 1)).toBe(true);

  // Exactly one email row per recipient, every one final: SENT (none failed or was cancelled).
  const emails = await emailsOf(t, x.campaignId);
  expect(emails).toHaveLength(N);
  expect(new Set(emails.map((e) => e.contact_id))).toEqual(new Set(x.contacts.map((c) => c.id)));
  expect(emails.filter((e) => e.status !== 'SENT').map((e) => `${e.to_email}=${e.status} (${e.error ?? ''})`)).toEqual([]);

  // No silent miss: a recipient without a message has its email marked unconfirmed (the worker
  // died after its final dot, before the 250 was recorded); every other email has no note, and
  // its message arrived with the Message-ID stored on the row.
  expect(emails.filter((e) => e.error !== null && e.error !== UNCONFIRMED_NOTE).map((e) => e.error)).toEqual([]);
  const missing = emails.filter((e) => !received.has(e.to_email));
  expect(missing.filter((e) => e.error !== UNCONFIRMED_NOTE).map((e) => e.to_email), 'recipients silently missed').toEqual([]);
  expect(received.size + missing.length).toBe(N);
  // Only an email in its SMTP transaction at the kill can be left unconfirmed: an email becomes
  // SENDING once it holds one of the pool's connections, so at most that many.
  expect(emails.filter((e) => e.error === UNCONFIRMED_NOTE).length).toBeLessThanOrEqual(SMTP_POOL_DEFAULTS.maxConnections);
  const unconfirmed = emails.filter((e) => e.unconfirmed).length;
  expect(emails.filter((e) => e.unconfirmed !== (e.error === UNCONFIRMED_NOTE))).toEqual([]);
  const messageIds = new Map(x.ours().map((m) => [m.to[0], m.messageId]));
  for (const e of emails) if (received.has(e.to_email)) expect(messageIds.get(e.to_email), e.to_email).toBe(e.message_id);

  // One email.sent event per email, however many job runs touched it.
  const { rows: events } = await sql<{ n: number; contacts: number }>`
    SELECT count(*)::int AS n, count(DISTINCT contact_id)::int AS contacts FROM events
    WHERE project_id = ${x.s.project.id} AND name = ${STATUS_EVENT.SENT}`.execute(t.db.db);
  expect(events[0]).toEqual({ n: N, contacts: N });

  // The API's counters and stats agree with the rows.
  const got = await api(t.app, x.s.project, 'GET', `/campaigns/${x.campaignId}`);
  expect(got.statusCode, got.body).toBe(200);
  expect(got.json<Campaign>()).toMatchObject({ status: 'SENT', totalRecipients: N, sentCount: N - unconfirmed, unconfirmedCount: unconfirmed });
  const stats = await api(t.app, x.s.project, 'GET', `/campaigns/${x.campaignId}/stats`);
  expect(stats.statusCode, stats.body).toBe(200);
  expect(stats.json<CampaignStats>()).toMatchObject({ total: N, pending: 0, sent: N - unconfirmed, unconfirmed, failed: 0, cancelled: 0 });
}

describe('a worker killed (SIGKILL) mid-campaign', () => {
  it('once a worker runs again the campaign reaches SENT, each recipient delivered at most once, none silently missed', { timeout: 120_000 }, async () => {
    const x = await killWorkerMidCampaign();
    // The dead worker had beaten (src/jobs/liveness.ts) and still holds jobs.
    const pools = [...new Set(x.locks.map((l) => l.lockedBy))];
    expect(pools.length, 'the kill left no locked job: nothing to release').toBeGreaterThan(0);
    const beats = await t.db.db.selectFrom('worker_heartbeats').select('worker_id').where('worker_id', 'in', pools).execute();
    expect(beats.map((b) => b.worker_id).sort()).toEqual([...pools].sort());
    // An unthrottled worker; nothing else is done about the dead one: the running worker sees
    // it silent and releases its jobs (not graphile-worker's own 4-hour lock timeout).
    await startReadyWorker(sink.url);
    await waitForCampaignSent(x.campaignId, RECOVERY_MS);
    await expectDeliveredExactlyOnce(x);
    expect(await t.db.db.selectFrom('worker_heartbeats').select('worker_id').where('worker_id', 'in', pools).execute()).toEqual([]);
    const { rows: left } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_by = ANY(${pools}::text[])`.execute(t.db.db);
    expect(left[0]?.n).toBe(0);
  });

  it("once the dead worker's job locks are released, the re-run jobs deliver nothing twice and the campaign reaches SENT", { timeout: 90_000 }, async () => {
    const x = await killWorkerMidCampaign();
    // The killed worker held jobs: some of their emails not sent yet (PENDING), some already
    // SENT (the job's completion not recorded yet), some SENDING (cut between markSending and
    // the relay's 250): the re-run must skip the SENT ones, send again the SENDING ones cut
    // before their final dot and mark unconfirmed those cut after it.
    expect(x.locks.length, 'the kill left no locked job: nothing re-runs').toBeGreaterThan(0);
    const pools = [...new Set(x.locks.map((l) => l.lockedBy))];
    // What an operator may do at once for a worker known dead (WorkerUtils.forceUnlockWorkers),
    // before the liveness check would.
    await sql`SELECT graphile_worker.force_unlock_workers(${pools}::text[])`.execute(t.db.db);
    await startReadyWorker(sink.url);
    await waitForCampaignSent(x.campaignId, RECOVERY_MS);
    await expectDeliveredExactlyOnce(x);
  });
});
