import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';
import { call, type CallOptions, type Cluster, inParallel, ok as okCall, setUpProject, startCluster } from './cluster.js';

// Issue 16 point 1: two ROLE=api and two ROLE=worker processes on one PostgreSQL (and one Redis),
// every request sent to the API processes alternately. MULTI_PROCESS_SCALE=full runs the sizes
// of the documented full run (docs/operations.md "Several processes, tested"); the default is
// the shorter variant of `npm test`.
const FULL = process.env.MULTI_PROCESS_SCALE === 'full';
const SIZE = {
  tracks: FULL ? 20_000 : 2_000,
  sends: FULL ? 5_000 : 600,
  imported: FULL ? 19_000 : 1_500,
  workflowContacts: FULL ? 1_000 : 100,
};
const SIGNIN_LIMIT = 20;
const DOMAIN = 'cluster.example.com';
const WAIT_TIMEOUT_SECONDS = 20;

let cluster: Cluster;
let secret = '';
let publicKey = '';
let projectId = '';

const request = (i: number, method: string, url: string, opts?: CallOptions) => call(cluster, i, method, url, opts);
const ok = (i: number, method: string, url: string, opts?: CallOptions) => okCall(cluster, i, method, url, opts);
const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await cluster.query<{ n: string }>(sql, params))[0]?.n);

beforeAll(async () => {
  cluster = await startCluster({
    apis: 2,
    workers: 2,
    env: { RATE_LIMIT_PER_MINUTE: '10000000', SIGNIN_RATE_LIMIT_PER_MINUTE: String(SIGNIN_LIMIT), LOG_LEVEL: 'info' },
    // "Completed task …" lines are debug: the cron check counts them.
    workerEnv: { LOG_LEVEL: 'debug' },
  });
  ({ secret, publicKey, id: projectId } = await setUpProject(cluster, DOMAIN));
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
}, 120_000);

describe('two API and two worker processes on one PostgreSQL', () => {
  it('shares sign-in rate limits across the API processes through Redis', { timeout: 90_000 }, async (ctx) => {
    if (!cluster.redisUrl) ctx.skip();
    // One fixed one-minute window for the whole burst: not in its last 10 seconds.
    await until('the start of a rate-limit window', () => Date.now() % 60_000 < 50_000, { timeoutMs: 15_000, intervalMs: 200 });
    const window = Math.floor(Date.now() / 60_000);
    const answers = await inParallel(SIGNIN_LIMIT + 10, 4, (i) =>
      request(i, 'POST', '/auth/login', { body: { email: `nobody-${i}-${randomUUID()}@example.com`, password: 'wrong password' } }),
    );
    expect(Math.floor(Date.now() / 60_000)).toBe(window);
    const limited = answers.map((a, i) => ({ i, limited: a.status === 429 })).filter((a) => a.limited);
    // Per-process counters would let 2 × 20 through: no 429 at all for 30 attempts.
    expect(answers.length - limited.length).toBeLessThanOrEqual(SIGNIN_LIMIT);
    expect(new Set(limited.map((a) => a.i % 2))).toEqual(new Set([0, 1]));
  });

  it('records every accepted event once, delivers every accepted email once, runs imports, a campaign and a workflow', { timeout: 600_000 }, async () => {
    const started = Date.now();
    // A workflow: TRIGGER "trial" → WAIT_FOR_EVENT "purchase" (timeout) → event: DELAY 1 minute →
    // UPDATE_CONTACT {followedUp}; timeout: UPDATE_CONTACT {timedOut}.
    const wf = await ok(0, 'POST', '/workflows', { key: secret, body: { name: 'trial follow-up', eventName: 'trial' } });
    const full = await ok(1, 'GET', `/workflows/${String(wf.id)}`, { key: secret });
    const trigger = (full.steps as { id: string; type: string }[]).find((s) => s.type === 'TRIGGER');
    if (!trigger) throw new Error(`no TRIGGER step: ${JSON.stringify(full)}`);
    const step = async (i: number, type: string, config: unknown) => String((await ok(i, 'POST', `/workflows/${String(wf.id)}/steps`, { key: secret, body: { type, name: type.toLowerCase(), config } })).id);
    const link = (i: number, fromStepId: string, toStepId: string, branch?: string) =>
      ok(i, 'POST', `/workflows/${String(wf.id)}/transitions`, { key: secret, body: { fromStepId, toStepId, ...(branch ? { branch } : {}) } });
    const wait = await step(0, 'WAIT_FOR_EVENT', { eventName: 'purchase', timeout: WAIT_TIMEOUT_SECONDS });
    const delay = await step(1, 'DELAY', { amount: 1, unit: 'minutes' });
    const followUp = await step(0, 'UPDATE_CONTACT', { updates: { followedUp: true } });
    const timedOut = await step(1, 'UPDATE_CONTACT', { updates: { timedOut: true } });
    await link(0, trigger.id, wait);
    await link(1, wait, delay, 'event');
    await link(0, delay, followUp);
    await link(1, wait, timedOut, 'timeout');
    await ok(0, 'PATCH', `/workflows/${String(wf.id)}`, { key: secret, body: { enabled: true } });

    const wfEmail = (i: number) => `wf-${i}@${DOMAIN}`;
    await inParallel(SIZE.workflowContacts, 8, (i) => ok(i, 'POST', '/v1/track', { key: publicKey, body: { email: wfEmail(i), event: 'trial' } }));
    await until('every trial contact waiting for "purchase"', async () => (await count(`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = $1 AND status = 'WAITING' AND wait_event IS NOT NULL`, [wf.id])) === SIZE.workflowContacts, { timeoutMs: 60_000, intervalMs: 200 });
    // The even-numbered half buys while waiting.
    const buyers = Math.ceil(SIZE.workflowContacts / 2);
    await inParallel(buyers, 8, (k) => ok(k, 'POST', '/v1/track', { key: publicKey, body: { email: wfEmail(2 * k), event: 'purchase' } }));

    // An import through one API, followed through the other.
    const rows = Array.from({ length: SIZE.imported }, (_, i) => `imported-${i}@${DOMAIN},true,${i % 3 === 0 ? 'pro' : 'free'}`);
    const form = new FormData();
    form.append('file', new Blob([`email,subscribed,plan\n${rows.join('\n')}\n`], { type: 'text/csv' }), 'contacts.csv');
    const job = await ok(0, 'POST', '/contacts/import', { key: secret, form });

    // Tracks and sends through both APIs at once.
    const [tracks, sends] = await Promise.all([
      inParallel(SIZE.tracks, 16, (i) => request(i, 'POST', '/v1/track', { key: publicKey, body: { email: `tracked-${i % 500}@${DOMAIN}`, event: 'cluster-event', data: { n: i } } })),
      inParallel(SIZE.sends, 16, (i) =>
        request(i, 'POST', '/v1/send', {
          key: secret,
          headers: { 'idempotency-key': `send-${i}` },
          body: { to: `sent-${i}@${DOMAIN}`, from: `hello@${DOMAIN}`, subject: `Send ${i}`, body: `<p>Hello ${i}</p>` },
        }),
      ),
    ]);
    expect(tracks.filter((t) => t.status !== 200).map((t) => t.body)).toEqual([]);
    expect(sends.filter((s) => s.status !== 200).map((s) => s.body)).toEqual([]);
    const sendIds = sends.map((s) => ((s.body.data as { emails: [{ email: string }] }).emails[0].email));

    // Idempotency keys across processes: replayed through the other API, and raced through both.
    const replays = await inParallel(50, 8, (i) => request(i + 1, 'POST', '/v1/send', { key: secret, headers: { 'idempotency-key': `send-${i}` }, body: { to: `sent-${i}@${DOMAIN}`, from: `hello@${DOMAIN}`, subject: `Send ${i}`, body: `<p>Hello ${i}</p>` } }));
    expect(replays.map((r) => r.status)).toEqual(new Array(50).fill(409));
    const raced = await inParallel(20, 4, async (k) => {
      const send = (i: number) => request(i, 'POST', '/v1/send', { key: secret, headers: { 'idempotency-key': `race-${k}` }, body: { to: `raced-${k}@${DOMAIN}`, from: `hello@${DOMAIN}`, subject: `Race ${k}`, body: '<p>Race</p>' } });
      return (await Promise.all([send(0), send(1)])).map((r) => r.status).sort();
    });
    expect(raced).toEqual(new Array(20).fill([200, 409]));

    // The import, then a campaign to every subscribed contact, sent through the other API.
    await until('the import', async () => ['COMPLETED', 'FAILED'].includes(String((await ok(1, 'GET', `/contacts/import/${String(job.jobId)}`, { key: secret })).status)), { timeoutMs: 120_000, intervalMs: 200 });
    expect(await ok(1, 'GET', `/contacts/import/${String(job.jobId)}`, { key: secret })).toMatchObject({ status: 'COMPLETED' });
    expect(await count(`SELECT count(*) AS n FROM contacts WHERE project_id = $1 AND email LIKE 'imported-%'`, [projectId])).toBe(SIZE.imported);
    const campaign = (await ok(0, 'POST', '/campaigns', { key: secret, body: { name: 'cluster', subject: 'News', body: '<p>News</p>', from: `news@${DOMAIN}` } })).data as { id: string };
    await ok(1, 'POST', `/campaigns/${campaign.id}/send`, { key: secret, body: {} });
    await until('the campaign SENT', async () => (await ok(0, 'GET', `/campaigns/${campaign.id}`, { key: secret })).status === 'SENT', { timeoutMs: 300_000, intervalMs: 200 });
    const recipients = await count(`SELECT count(*) AS n FROM emails WHERE campaign_id = $1`, [campaign.id]);
    const subscribed = await count(`SELECT count(*) AS n FROM contacts WHERE project_id = $1 AND subscribed`, [projectId]);
    expect(recipients).toBe(subscribed);

    // Every accepted email at the sink exactly once.
    const expectedMail = SIZE.sends + 20 + recipients;
    await cluster.sink.waitForMessages(expectedMail, 300_000);
    // No delivery job left anywhere: nothing more can arrive, duplicates included.
    await until('no delivery job left', async () => (await count(`SELECT count(*) AS n FROM graphile_worker.jobs WHERE task_identifier IN ('send-email', 'send-batch', 'campaign-deliver')`)) === 0, { timeoutMs: 60_000, intervalMs: 200 });
    const ids = cluster.sink.messages.map((m) => m.messageId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(expectedMail);
    const delivered = new Set(ids.map((id) => id?.slice(1, id.indexOf('@'))));
    expect(sendIds.filter((id) => !delivered.has(id))).toEqual([]);
    const campaignIds = (await cluster.query<{ id: string }>(`SELECT id FROM emails WHERE campaign_id = $1`, [campaign.id])).map((r) => r.id);
    expect(campaignIds.filter((id) => !delivered.has(id))).toEqual([]);

    console.log(`multi-process: ${JSON.stringify({ seconds: Math.round((Date.now() - started) / 1000), tracks: SIZE.tracks, sends: SIZE.sends + 20, imported: SIZE.imported, campaignRecipients: recipients, delivered: ids.length, workflowContacts: SIZE.workflowContacts })}`);

    // Every accepted event recorded once.
    const eventIds = tracks.map((t) => String((t.body.data as { event: string }).event));
    expect(new Set(eventIds).size).toBe(SIZE.tracks);
    expect(await count(`SELECT count(*) AS n FROM events WHERE project_id = $1 AND name = 'cluster-event'`, [projectId])).toBe(SIZE.tracks);
    expect(await count(`SELECT count(*) AS n FROM events WHERE id = ANY($1::uuid[])`, [eventIds])).toBe(SIZE.tracks);

    // The workflow: buyers followed up after the delay, the others timed out; each step once.
    await until('every workflow execution COMPLETED', async () => (await count(`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = $1 AND status = 'COMPLETED'`, [wf.id])) === SIZE.workflowContacts, { timeoutMs: 180_000, intervalMs: 200 });
    const flags = await cluster.query<{ followed: string; timed: string }>(
      `SELECT count(*) FILTER (WHERE data->>'followedUp' = 'true') AS followed, count(*) FILTER (WHERE data->>'timedOut' = 'true') AS timed
         FROM contacts WHERE project_id = $1 AND email LIKE 'wf-%'`,
      [projectId],
    );
    expect(flags.map((f) => ({ followed: Number(f.followed), timed: Number(f.timed) }))).toEqual([{ followed: buyers, timed: SIZE.workflowContacts - buyers }]);
    const repeated = await count(
      `SELECT count(*) AS n FROM (SELECT 1 FROM workflow_step_executions s JOIN workflow_executions e ON e.id = s.execution_id
         WHERE e.workflow_id = $1 GROUP BY s.execution_id, s.step_id HAVING count(*) > 1) d`,
      [wf.id],
    );
    expect(repeated).toBe(0);

    // Recurring jobs: once per period across both workers, never once per worker.
    const runs = new Map<string, number>();
    for (const worker of cluster.workers) {
      for (const line of worker.stdout().split('\n')) {
        const m = /"msg":"Completed task \d+ \((campaign-sweep|workflow-events-sweep|webhook-sweep),/.exec(line);
        const time = /"time":(\d+)/.exec(line);
        if (!m || !time) continue;
        const key = `${m[1]} ${Math.floor(Number(time[1]) / 60_000)}`;
        runs.set(key, (runs.get(key) ?? 0) + 1);
      }
    }
    const minutes = Math.floor((Date.now() - started) / 60_000);
    expect(new Set([...runs.keys()].map((k) => k.split(' ')[0]))).toEqual(new Set(['campaign-sweep', 'workflow-events-sweep', 'webhook-sweep']));
    expect(runs.size).toBeGreaterThanOrEqual(3 * Math.max(1, minutes - 1));
    expect([...runs].filter(([, n]) => n > 1)).toEqual([]);
  });
});
