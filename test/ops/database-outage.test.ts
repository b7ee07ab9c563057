import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';
import { call, type Cluster, type ClusterProject, setUpProject, startCluster } from './cluster.js';

// PostgreSQL stopped under running API and worker processes, then started again: requests during
// the outage are answered 503 with Retry-After (not 500, not a hang), and the same processes serve
// and deliver again once it is back, without a restart of their own.
let cluster: Cluster;
let project: ClusterProject;

beforeAll(async () => {
  cluster = await startCluster({ apis: 1, workers: 1, env: { RATE_LIMIT_PER_MINUTE: '10000000' } });
  project = await setUpProject(cluster, 'outage.example.com');
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
}, 120_000);

describe('a PostgreSQL restart under running processes', () => {
  it('answers 503 with Retry-After while the database is down, and serves and delivers again once it is back', { timeout: 180_000 }, async () => {
    const track = (n: number) => call(cluster, 0, 'POST', '/v1/track', { key: project.publicKey, body: { email: `outage-${n}@example.com`, event: 'outage' } });
    const send = (n: number) =>
      call(cluster, 0, 'POST', '/v1/send', {
        key: project.secret,
        headers: { 'idempotency-key': `outage-send-${n}` },
        body: { to: `outage-${n}@example.com`, from: `hello@${project.domain}`, subject: `Outage ${n}`, body: '<p>Hi</p>' },
      });
    expect((await track(0)).status).toBe(200);

    await cluster.stopDatabase();
    for (const res of [await track(1), await send(1), await call(cluster, 0, 'GET', '/contacts', { key: project.secret })]) {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(res.body).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE', statusCode: 503 } });
    }
    expect((await call(cluster, 0, 'GET', '/health')).status).toBe(503);

    await cluster.startDatabase();
    await until('the API to reach the database again', async () => (await track(2)).status === 200, { timeoutMs: 60_000, intervalMs: 250 });
    const sent = await send(2);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    // The worker's connections were cut too: it picks the email up without being restarted.
    await cluster.sink.waitForMessages(1, 90_000);
    expect(cluster.sink.messages.map((m) => m.to)).toEqual([['outage-2@example.com']]);
    for (const proc of [...cluster.apis, ...cluster.workers]) expect(proc.child.exitCode).toBeNull();
    // Nothing of the refused calls was stored.
    const rows = await cluster.query<{ email: string }>(`SELECT email FROM contacts WHERE project_id = $1 ORDER BY email`, [project.id]);
    expect(rows.map((r) => r.email)).toEqual(['outage-0@example.com', 'outage-2@example.com']);
  });
});
