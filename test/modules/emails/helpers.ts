import { randomUUID } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import type { FastifyInstance } from 'fastify';
import type { Runner } from 'graphile-worker';
import { sql } from 'kysely';
import pino from 'pino';
import { inject } from 'vitest';
import { buildApp } from '../../../src/app.js';
import { type AppDeps, createAppDeps } from '../../../src/app-deps.js';
import { type Config, loadConfig } from '../../../src/config.js';
import { connect, type Db } from '../../../src/db/connection.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import type { EmailStatus } from '../../../src/db/schema.js';
import { memoryStore } from '../../../src/http/rate-limit.js';
import { createSecretBox } from '../../../src/lib/secret-box.js';
import { generateDkimKey, type GeneratedDkimKey } from '../../../src/modules/domains/dkim-keys.js';
import { Tasks } from '../../../src/jobs/queue.js';
import { startWorker } from '../../../src/worker.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { TEST_SECRET } from '../../helpers/app.js';
import type { TestDnsServer } from '../../helpers/dns-server.js';
import { type SmtpSink, startSmtpSink } from '../../helpers/smtp-sink.js';

/**
 * The sending tests run on a database of their own (created and migrated per test file, on
 * the shared test server): other test files start workers that would otherwise pick up
 * send-email jobs and deliver them with their own configuration (capture mode), and this
 * file's workers would run theirs.
 */
export interface SendTestApp {
  app: FastifyInstance;
  config: Config;
  db: Db;
  deps: AppDeps;
  /** Starts a graphile-worker runner on this database with `deps` (silent logs). */
  startWorker(opts?: { concurrency?: number }): Promise<Runner>;
  /** Starts the file's main worker, if it is not running. */
  runWorker(): Promise<void>;
  /** Runs `fn` with the main worker stopped (to stage a state by hand), then runs it again (unless `fn` did). */
  withWorkerStopped(fn: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

function databaseUrl(name: string): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createSendTestApp(opts: { env?: Record<string, string> } = {}): Promise<SendTestApp> {
  const name = `mp_emails_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = connect(inject('databaseUrl'), { max: 1 });
  await sql`CREATE DATABASE ${sql.id(name)}`.execute(admin.db);
  const db = connect(databaseUrl(name), { max: 10 });
  await migrateToLatest(db.db, db.pool);
  const config = loadConfig({ DATABASE_URL: databaseUrl(name), SECRET: TEST_SECRET, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '1000000', SIGNIN_RATE_LIMIT_PER_MINUTE: '1000000', ...opts.env });
  // As the server's API: POST /v1/send on generic-plan connections (connectForRequests' `hot`).
  const hot = connect(databaseUrl(name), { max: 4, genericPlans: true });
  const deps = { ...createAppDeps(config, db.db), hotDb: hot.db };
  const app = await buildApp(deps, { rateLimitStore: memoryStore() });
  await app.ready();
  const runners: Runner[] = [];
  let main: Runner | undefined;
  const startWorkerOn = async (o: { concurrency?: number } = {}) => {
    const runner = await startWorker({ pool: db.pool, deps, log: pino({ level: 'silent' }), cron: false, concurrency: o.concurrency ?? 4 });
    runners.push(runner);
    return runner;
  };
  return {
    app,
    config,
    db,
    deps,
    startWorker: startWorkerOn,
    async runWorker() {
      main ??= await startWorkerOn();
    },
    async withWorkerStopped(fn) {
      await main?.stop();
      main = undefined;
      try {
        await fn();
      } finally {
        main ??= await startWorkerOn();
      }
    },
    async close() {
      for (const r of runners) await r.stop().catch(() => undefined);
      await app.close();
      await deps.mail.close();
      await Promise.all([db.close(), hot.close()]);
      await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.db);
      await admin.close();
    },
  };
}

let sharedKey: Promise<GeneratedDkimKey> | undefined;

/**
 * Adds `domain` to the project as verified, with a real RSA-2048 key sealed as the domains
 * module seals it, and publishes its DKIM record on the test DNS server when given one. The
 * project is then ready to send: its OWNERs' addresses are marked verified too (with SMTP_URL
 * set, users start unverified and a project sends only once an OWNER is: docs/accounts.md),
 * unless `verifyOwners: false` (the tests of that rule).
 */
export async function addVerifiedDomain(
  t: Pick<SendTestApp, 'db' | 'config'>,
  projectId: string,
  opts: { domain?: string; dns?: TestDnsServer; verifyOwners?: boolean } = {},
): Promise<{ domain: string; selector: string }> {
  if (opts.verifyOwners !== false) {
    await t.db.db
      .updateTable('users')
      .set({ email_verified_at: new Date() })
      .where('email_verified_at', 'is', null)
      .where('id', 'in', (q) => q.selectFrom('memberships').select('user_id').where('project_id', '=', projectId).where('role', '=', 'OWNER'))
      .execute();
  }
  const domain = opts.domain ?? `s${randomUUID().slice(0, 8)}.example`;
  sharedKey ??= generateDkimKey();
  const key = await sharedKey;
  const selector = `mp${randomUUID().slice(0, 6)}`;
  await t.db.db
    .insertInto('domains')
    .values({
      project_id: projectId,
      domain,
      dkim_selector: selector,
      dkim_public_key: key.publicKey,
      dkim_private_key: createSecretBox(t.config.secret, 'dkim').seal(key.privateKeyPem),
      verified: true,
      verified_at: new Date(),
    })
    .execute();
  opts.dns?.set(`${selector}._domainkey.${domain}`, { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey}`] });
  return { domain, selector };
}

export interface Sender {
  project: TestProject;
  domain: string;
  /** `<localPart>@<domain>`, a verified sender of the project. */
  from: string;
}

/** A fresh user and project with a verified sender domain (see {@link addVerifiedDomain}). */
export async function newSender(t: Pick<SendTestApp, 'app' | 'db' | 'config'>, localPart = 'hello'): Promise<Sender> {
  const { project } = await newProject(t.app);
  const { domain } = await addVerifiedDomain(t, project.id);
  return { project, domain, from: `${localPart}@${domain}` };
}

/** A mailauth resolver that asks the test DNS server. */
export function dnsResolver(dns: TestDnsServer) {
  const resolver = new Resolver({ timeout: 2000, tries: 1 });
  resolver.setServers([dns.address]);
  // DKIM verification asks for TXT records only.
  return async (name: string, rrtype: string): Promise<string[][]> => {
    if (rrtype !== 'TXT') throw Object.assign(new Error(`no ${rrtype} records in the test zone`), { code: 'ENODATA' });
    return resolver.resolveTxt(name);
  };
}

/** POST /v1/send with the project's secret key. */
export const send = (app: FastifyInstance, project: TestProject, payload: object, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/v1/send', headers: { ...bearer(project.secret), ...headers }, payload });

export interface SendAnswer {
  success: true;
  data: { emails: { contact: { id: string; email: string }; email: string }[]; timestamp: string };
}

/** Polls until every email has one of `statuses`; returns the rows. */
export async function waitForStatus(db: Db, emailIds: readonly string[], statuses: readonly EmailStatus[], timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await db.db.selectFrom('emails').selectAll().where('id', 'in', emailIds).execute();
    if (rows.length === emailIds.length && rows.every((r) => statuses.includes(r.status))) return rows;
    if (Date.now() > deadline) {
      throw new Error(`emails not ${statuses.join('/')} after ${timeoutMs} ms: ${rows.map((r) => `${r.id}=${r.status} (${r.error ?? ''})`).join(', ')}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The graphile-worker jobs of these emails, one row per email (key = its id): send-email jobs (keyed by it) and the send-batch jobs holding it. */
export async function jobsOf(db: Db, emailIds: readonly string[]) {
  if (emailIds.length === 0) return [];
  const { rows } = await sql<{ key: string; priority: number; max_attempts: number; attempts: number; task: string; payload: unknown }>`
    SELECT e.id AS key, j.priority, j.max_attempts, j.attempts, t.identifier AS task, j.payload
    FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    CROSS JOIN LATERAL (
      SELECT j.key WHERE t.identifier <> ${Tasks.sendBatch}
      UNION ALL SELECT json_array_elements_text(j.payload -> 'emailIds') WHERE t.identifier = ${Tasks.sendBatch}
    ) AS e(id)
    WHERE e.id = ANY(${emailIds}::text[])`.execute(db.db);
  return rows;
}

/** A send test app delivering to an SMTP sink of its own, its worker running; `close` stops both. */
export async function createSinkTestApp(): Promise<{ sink: SmtpSink; t: SendTestApp; close(): Promise<void> }> {
  const sink = await startSmtpSink({ keepRaw: false });
  const t = await createSendTestApp({ env: { SMTP_URL: sink.url } });
  await t.runWorker();
  return {
    sink,
    t,
    async close() {
      await t.close();
      await sink.close();
    },
  };
}
