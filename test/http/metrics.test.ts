import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, buildOpsApp } from '../../src/app.js';
import { memoryStore } from '../../src/http/rate-limit.js';
import { bearer } from '../helpers/accounts.js';
import { expectEnvelope } from '../helpers/envelope.js';
import { createSendTestApp, newSender, send, type SendAnswer, type SendTestApp, waitForStatus } from '../modules/emails/helpers.js';

/**
 * GET /metrics on a database of its own (createSendTestApp): the queue depth it reports is this
 * file's jobs only, and its worker delivers this file's emails (capture mode).
 */
let t: SendTestApp;
beforeAll(async () => {
  t = await createSendTestApp();
});
afterAll(async () => {
  await t?.close();
});

const TOKEN = 'metrics-token-0123456789abcdef';

/** One sample line: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the text exposition format strictly: every line is a comment (HELP/TYPE) or a sample. */
function parseExposition(text: string): { samples: Sample[]; help: Set<string>; types: Map<string, string> } {
  const samples: Sample[] = [];
  const help = new Set<string>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (comment) {
      if (comment[1] === 'HELP') help.add(comment[2] ?? '');
      else types.set(comment[2] ?? '', comment[3] ?? '');
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|NaN|Nan|[+-]Inf)$/.exec(line);
    if (!sample) throw new Error(`not a valid exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
    samples.push({ name: sample[1] ?? '', labels, value: Number(sample[3]) });
  }
  return { samples, help, types };
}

async function scrape(app: FastifyInstance = t.app) {
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(res.body);
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const valueOf = (samples: Sample[], name: string, labels: Record<string, string> = {}) => find(samples, name, labels)[0]?.value;

describe('GET /metrics', () => {
  it('answers the Prometheus text format: every family with HELP and TYPE, every name prefixed', async () => {
    const { samples, help, types } = await scrape();
    expect(samples.length).toBeGreaterThan(50);
    for (const [name, type] of types) {
      expect(help.has(name), name).toBe(true);
      expect(['counter', 'gauge', 'histogram', 'summary']).toContain(type);
      expect(name.startsWith('mailplatform_'), name).toBe(true);
    }
    for (const s of samples) {
      const family = [...types.keys()].find((f) => s.name === f || s.name.startsWith(`${f}_`));
      expect(family, s.name).toBeDefined();
    }
    // Event-loop lag and the pools, besides our own.
    expect(types.get('mailplatform_nodejs_eventloop_lag_seconds')).toBe('gauge');
    expect(valueOf(samples, 'mailplatform_db_pool_max_connections', { pool: 'mailplatform' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'mailplatform_scrape_database_success')).toBe(1);
  });

  it('counts a request under its route pattern and status, never its URL', async () => {
    const id = randomUUID();
    const before = (await scrape()).samples;
    const res = await t.app.inject({ method: 'GET', url: `/emails/${id}` });
    expect(res.statusCode).toBe(401);
    await t.app.inject({ method: 'GET', url: `/no-such-route/${id}` });
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(text).not.toContain(id);
    const { samples } = parseExposition(text);
    const labels = { route: '/emails/:id', method: 'GET', status_code: '401' };
    expect(valueOf(samples, 'mailplatform_http_request_duration_seconds_count', labels)).toBe(
      (valueOf(before, 'mailplatform_http_request_duration_seconds_count', labels) ?? 0) + 1,
    );
    expect(valueOf(samples, 'mailplatform_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBeGreaterThan(0);
    expect(valueOf(samples, 'mailplatform_http_request_duration_seconds_count', { route: 'unmatched', method: 'GET', status_code: '404' })).toBeGreaterThan(0);
  });

  it('reports the job queue by task and state, with the age of the oldest runnable job', async () => {
    const task = `metrics-test-${randomUUID().slice(0, 8)}`;
    // Nobody runs this task: its jobs stay where they are put.
    await sql`SELECT graphile_worker.add_job(${task}, '{}'::json, run_at => now() - interval '90 seconds')`.execute(t.db.db);
    await sql`SELECT graphile_worker.add_job(${task}, '{}'::json)`.execute(t.db.db);
    await sql`SELECT graphile_worker.add_job(${task}, '{}'::json, run_at => now() + interval '1 hour')`.execute(t.db.db);
    const { samples } = await scrape();
    expect(valueOf(samples, 'mailplatform_job_queue_jobs', { task, state: 'runnable' })).toBe(2);
    expect(valueOf(samples, 'mailplatform_job_queue_jobs', { task, state: 'scheduled' })).toBe(1);
    expect(valueOf(samples, 'mailplatform_job_queue_jobs', { task, state: 'running' })).toBe(0);
    expect(valueOf(samples, 'mailplatform_job_queue_oldest_runnable_age_seconds', { task })).toBeGreaterThanOrEqual(90);
    await sql`DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks k WHERE k.id = j.task_id AND k.identifier = ${task}`.execute(t.db.db);
    expect(find((await scrape()).samples, 'mailplatform_job_queue_jobs', { task })).toEqual([]);
  });

  it('records a delivery: accepted → SENT latency, the outcome, pending and sent emails, group-commit batches', async () => {
    const sender = await newSender(t);
    const before = (await scrape()).samples;
    const res = await send(t.app, sender.project, { to: 'metrics@example.com', from: sender.from, subject: 'Measured', body: '<p>hi</p>' });
    const [id = ''] = res.json<SendAnswer>().data.emails.map((e) => e.email);
    expect(valueOf((await scrape()).samples, 'mailplatform_emails_pending')).toBeGreaterThanOrEqual(1);
    await t.runWorker();
    await waitForStatus(t.db, [id], ['SENT']);
    const { samples } = await scrape();
    const grew = (name: string, labels: Record<string, string>) => (valueOf(samples, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);
    expect(grew('mailplatform_email_delivery_seconds_count', { source: 'SEND' })).toBe(1);
    expect(grew('mailplatform_email_deliveries_total', { outcome: 'captured' })).toBe(1);
    expect(grew('mailplatform_emails_total', { status: 'sent' })).toBe(1);
    expect(grew('mailplatform_group_commit_batch_size_count', { batcher: 'send' })).toBe(1);
    expect(grew('mailplatform_group_commit_batch_size_count', { batcher: 'delivery_load' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(samples, 'mailplatform_workers_live')).toBeGreaterThanOrEqual(1);
  });

  it('answers within its deadline, without the database series, when the database is stuck', async () => {
    const locker = await t.db.pool.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE graphile_worker._private_jobs IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const { samples } = await scrape();
      expect(Date.now() - started).toBeLessThan(3000);
      expect(valueOf(samples, 'mailplatform_scrape_database_success')).toBe(0);
      expect(find(samples, 'mailplatform_job_queue_jobs')).toEqual([]);
      expect(find(samples, 'mailplatform_emails_pending')).toEqual([]);
      // The process's own metrics are still there.
      expect(valueOf(samples, 'mailplatform_db_pool_max_connections', { pool: 'mailplatform' })).toBeGreaterThan(0);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
  });
});

describe('GET /metrics access', () => {
  it('without METRICS_TOKEN answers clients on this machine and refuses others and proxied requests with 403', async () => {
    expect(t.config.metricsToken).toBeUndefined();
    expect((await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '::1' })).statusCode).toBe(200);
    const remote = await t.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' });
    expect(expectEnvelope(remote, 403, 'FORBIDDEN').message).toMatch(/METRICS_TOKEN/);
    const proxied = await t.app.inject({ method: 'GET', url: '/metrics', headers: { 'x-forwarded-for': '203.0.113.9' } });
    expectEnvelope(proxied, 403, 'FORBIDDEN');
  });

  describe('with METRICS_TOKEN', () => {
    let app: FastifyInstance;
    beforeAll(async () => {
      app = await buildApp({ ...t.deps, config: { ...t.config, metricsToken: TOKEN } }, { rateLimitStore: memoryStore() });
      await app.ready();
    });
    afterAll(async () => {
      await app?.close();
    });

    it('refuses a missing or wrong token with 401 in the envelope, from anywhere', async () => {
      const missing = await app.inject({ method: 'GET', url: '/metrics' });
      expectEnvelope(missing, 401, 'UNAUTHORIZED');
      expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
      expectEnvelope(await app.inject({ method: 'GET', url: '/metrics', headers: bearer(`${TOKEN}x`) }), 401, 'UNAUTHORIZED');
      expectEnvelope(await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Basic ${TOKEN}` } }), 401, 'UNAUTHORIZED');
    });

    it('answers the right token, from another machine too', async () => {
      const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN), remoteAddress: '203.0.113.9' });
      expect(res.statusCode).toBe(200);
      expect(res.body).toContain('# TYPE mailplatform_http_request_duration_seconds histogram');
    });

    it('is never rate limited', async () => {
      const limited = await buildApp({ ...t.deps, config: { ...t.config, metricsToken: TOKEN, rateLimitPerMinute: 1 } }, { rateLimitStore: memoryStore() });
      try {
        for (let i = 0; i < 3; i++) expect((await limited.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) })).statusCode).toBe(200);
      } finally {
        await limited.close();
      }
    });
  });

  it('is served alone by the METRICS_PORT app with the same rules', async () => {
    const ops = await buildOpsApp(t.deps);
    try {
      expect((await ops.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
      expectEnvelope(await ops.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' }), 403, 'FORBIDDEN');
      expect((await ops.inject({ method: 'GET', url: '/health/live' })).json()).toEqual({ status: 'ok' });
      expectEnvelope(await ops.inject({ method: 'GET', url: '/contacts' }), 404, 'NOT_FOUND');
    } finally {
      await ops.close();
    }
  });
});
