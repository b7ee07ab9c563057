import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp, buildOpsApp, REDACT } from './app.js';
import { type AppDeps, createAppDeps } from './app-deps.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { connect, connectForRequests, type Db, type RequestDb } from './db/connection.js';
import { DatabaseStartError, openDatabase, type OpenDatabase } from './db/open.js';
import { startKeyCache } from './http/key-cache.js';
import { memoryStore, redisStore } from './http/rate-limit.js';
import { type InboundReceiver, startConfiguredReceiver } from './modules/bounces/index.js';
import { DEAD_AFTER_SECONDS } from './jobs/liveness.js';
import { startWorker, type WorkerRunner } from './worker.js';

/** Prints one clear line and exits non-zero: for failures a self-hoster can fix. */
function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

/** Fails before the database starts when the port is taken, instead of after. */
async function assertPortFree(config: Config): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(config.port, config.host, () => srv.close(() => resolve()));
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') fail(`port ${config.port} on ${config.host} is already in use (set PORT to a free port)`);
    if (err.code === 'EACCES') fail(`no permission to listen on port ${config.port} (set PORT to a port above 1023)`);
    fail(`cannot listen on ${config.host}:${config.port}: ${err.message}`);
  });
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  // Written asynchronously in blocks of 4 KB or every 250 ms, whichever comes first, and flushed
  // synchronously at exit: a write per line cost the API a system call per request at full rate
  // (docs/performance.md). A SIGKILL may lose the last quarter second of lines.
  const log = pino({ level: config.logLevel, redact: REDACT }, pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }));
  const serveApi = config.role !== 'worker';
  const runJobs = config.role !== 'api';

  let database: OpenDatabase | undefined;
  let requestDb: RequestDb | undefined;
  let keys: { close(): Promise<void> } | undefined;
  let app: FastifyInstance | undefined;
  let runner: WorkerRunner | undefined;
  let ops: FastifyInstance | undefined;
  let receiver: InboundReceiver | undefined;
  let inboundDb: Db | undefined;
  let deps: AppDeps | undefined;
  let stopping = false;

  const start = async () => {
    if (serveApi) await assertPortFree(config);
    if (stopping) return;
    try {
      database = await openDatabase(config, { onPostgresLog: (line) => log.debug({ component: 'postgres' }, line) });
    } catch (err) {
      if (err instanceof DatabaseStartError || err instanceof ConfigError) fail(err.message);
      throw err;
    }
    const db = database;
    if (stopping) return;
    const { newer } = await migrateToLatest(db.db, db.pool);
    if (newer.length > 0) log.warn({ migrations: newer }, 'the database has migrations of a newer version: running on its schema (docs/operations.md "Upgrades")');
    if (stopping) return;

    deps = { ...createAppDeps(config, db.db), stopping: () => stopping };
    if (runJobs) {
      runner = await startWorker({ pool: db.pool, deps, log });
      // GET /health/ready then wants this process's workers' heartbeats.
      deps = { ...deps, workers: { ids: runner.workerIds, deadAfterSeconds: DEAD_AFTER_SECONDS } };
    }
    if (serveApi && !stopping) {
      const store = config.redisUrl ? redisStore(config.redisUrl, (err) => log.warn({ err }, 'redis error')) : memoryStore();
      // The API has pools of its own: requests wait at most 2 s for a connection (then 503) and
      // never take the worker's, and /health keeps a reserved connection (docs/operations.md).
      requestDb = connectForRequests(db.url);
      const keyCache = startKeyCache(db.url, log.child({ component: 'key-cache' }));
      keys = keyCache;
      const apiDeps: AppDeps = { ...deps, db: requestDb.db, hotDb: requestDb.hot, ping: requestDb.ping, healthDb: requestDb.health, keyCache: keyCache.cache };
      app = await buildApp(apiDeps, { logger: log, rateLimitStore: store });
      // Answers sent while draining tell the client not to reuse the connection.
      app.addHook('onSend', (_request, reply, payload, done) => {
        if (stopping) reply.header('connection', 'close');
        done(null, payload);
      });
      try {
        await app.listen({ port: config.port, host: config.host });
      } catch (err) {
        await runner?.stop();
        await Promise.all([requestDb.close(), keyCache.close()]);
        await db.close();
        fail(`cannot listen on ${config.host}:${config.port}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    // METRICS_PORT: /metrics and /health/* on a port of their own, in any role (the worker's only HTTP).
    if (config.metricsPort !== undefined && !stopping) {
      ops = await buildOpsApp(deps, { logger: log.child({ component: 'metrics' }) });
      try {
        await ops.listen({ port: config.metricsPort, host: config.host });
      } catch (err) {
        await app?.close();
        await Promise.all([requestDb?.close(), keys?.close()]);
        await runner?.stop();
        await db.close();
        fail(`cannot listen on ${config.host}:${config.metricsPort} (METRICS_PORT): ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    // The inbound SMTP receiver runs in whichever process INBOUND_SMTP_PORT is set for, any role (docs/bounces.md).
    const inbound = config.inboundSmtp;
    if (inbound && !stopping) {
      // A pool of its own (at most 4 batches at once): reports never wait behind delivery jobs' connections.
      inboundDb = connect(db.url, { max: 4, applicationName: 'mailplatform-inbound' });
      try {
        receiver = await startConfiguredReceiver(config, inboundDb.db, log.child({ component: 'inbound-smtp' }));
      } catch (err) {
        await app?.close();
        await inboundDb.close();
        await Promise.all([requestDb?.close(), keys?.close()]);
        await runner?.stop();
        await db.close();
        fail(`cannot start the inbound SMTP receiver on ${inbound.host}:${inbound.port}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };

  // Installed before anything starts: a signal during start-up (initdb, migrations) must
  // not kill this process and leave its embedded PostgreSQL running, orphaned.
  let started: Promise<void> = Promise.resolve();
  const shutdown = async (signal: string) => {
    if (stopping) {
      log.warn(`${signal} again: exiting now`);
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down: draining requests and jobs');
    // A start in progress first reaches a state that the steps below can undo.
    await started.catch(() => undefined);
    // SHUTDOWN_DELAY_SECONDS: GET /health/ready answers 503 while requests are still served, so a
    // load balancer takes this process out before its port closes (docs/operations.md "Rolling restarts").
    if (app && config.shutdownDelaySeconds > 0) {
      log.info({ seconds: config.shutdownDelaySeconds }, 'shutting down: not ready, still serving until the delay ends');
      await new Promise((resolve) => setTimeout(resolve, config.shutdownDelaySeconds * 1000));
    }
    // close() ends only the keep-alive connections idle at this moment; one that goes idle
    // later (its request was in flight) would hold the shutdown until keepAliveTimeout.
    const reapIdle = setInterval(() => app?.server.closeIdleConnections(), 100);
    await Promise.all([app?.close(), receiver?.close(), ops?.close()]);
    clearInterval(reapIdle);
    await Promise.all([requestDb?.close(), inboundDb?.close(), keys?.close()]);
    await runner?.stop();
    await deps?.mail.close();
    await database?.close();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  started = start();
  await started;
  if (stopping) return;
  log.info(
    { role: config.role, database: database?.embedded ? 'embedded' : 'external', mail: config.smtpUrl ? 'smtp' : 'capture' },
    serveApi ? `ready: API on ${config.publicUrl}` : 'ready: worker running',
  );
  if (ops && config.metricsPort !== undefined) log.info({ host: config.host, port: config.metricsPort }, 'metrics and health listening (METRICS_PORT)');
  if (receiver && config.inboundSmtp) log.info({ host: config.inboundSmtp.host, port: receiver.port, tls: config.inboundSmtp.tls !== undefined }, `inbound SMTP receiver listening for ${config.bounceDomain}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  if (err instanceof Error && err.cause) process.stderr.write(`  cause: ${String(err.cause)}\n`);
  process.exit(1);
});
