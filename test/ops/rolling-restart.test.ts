import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/poll.js';
import { type Balancer, startBalancer } from './balancer.js';
import { type Cluster, type ClusterProject, setUpProject, startCluster } from './cluster.js';

// Issue 16 point 6: a rolling restart of the API processes behind a load balancer, under load —
// each one replaced by a new process, then sent SIGTERM — fails no request. SHUTDOWN_DELAY_SECONDS
// keeps the old one serving while /health/ready says 503, so the balancer stops sending to it
// before its port closes (docs/operations.md "Rolling restarts").
const CLIENTS = 16;

let cluster: Cluster;
let project: ClusterProject;
let balancer: Balancer;

beforeAll(async () => {
  cluster = await startCluster({ apis: 2, workers: 1, env: { RATE_LIMIT_PER_MINUTE: '10000000', SHUTDOWN_DELAY_SECONDS: '2' } });
  project = await setUpProject(cluster, 'rolling.example.com');
  balancer = await startBalancer();
  for (const api of cluster.apis) balancer.add(api.port);
  await until('both APIs ready at the balancer', () => balancer.healthy().length === 2, { timeoutMs: 10_000, intervalMs: 100 });
}, 240_000);

afterAll(async () => {
  await balancer?.close();
  await cluster?.stop();
}, 120_000);

describe('rolling restart of the API processes', () => {
  it('fails no request while every API process is replaced under load', { timeout: 300_000 }, async () => {
    const statuses = new Map<number, number>();
    const failures: string[] = [];
    let stop = false;
    let sent = 0;
    const loadDeadline = Date.now() + 180_000;
    const load = Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        for (let i = 0; !stop && Date.now() < loadDeadline; i++) {
          sent++;
          try {
            const res = await fetch(`${balancer.url}/v1/track`, {
              method: 'POST',
              headers: { authorization: `Bearer ${project.publicKey}`, 'content-type': 'application/json' },
              body: JSON.stringify({ email: `rolling-${c}@example.com`, event: 'rolling', data: { i } }),
              signal: AbortSignal.timeout(30_000),
            });
            const text = await res.text();
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status !== 200) failures.push(`${res.status} ${text.slice(0, 200)}`);
          } catch (err) {
            failures.push(`no answer: ${err instanceof Error ? err.message : String(err)}`);
          }
        }
      }),
    );

    await until('load flowing', () => (statuses.get(200) ?? 0) > 200, { timeoutMs: 30_000, intervalMs: 50 });
    for (const old of [...cluster.apis]) {
      const fresh = await cluster.add('api');
      balancer.add(fresh.port);
      await until('the new API ready at the balancer', () => balancer.healthy().includes(fresh.port), { timeoutMs: 10_000, intervalMs: 50 });
      const answeredBefore = statuses.get(200) ?? 0;
      expect(await cluster.terminate(old)).toEqual({ code: 0, signal: null });
      balancer.remove(old.port);
      // The load went on through the restart.
      expect(statuses.get(200) ?? 0).toBeGreaterThan(answeredBefore);
    }
    await until('more load on the new processes', () => (statuses.get(200) ?? 0) > sent / 2 + 200, { timeoutMs: 30_000, intervalMs: 50 });
    stop = true;
    await load;

    expect(failures.slice(0, 5)).toEqual([]);
    const answered = statuses.get(200) ?? 0;
    expect(answered).toBe(sent);
    const [row] = await cluster.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE project_id = $1 AND name = 'rolling'`, [project.id]);
    expect(Number(row?.n)).toBe(answered);
  });
});
