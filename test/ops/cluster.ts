import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { runCli } from '../helpers/cli.js';
import { cleanupServers, freePort, startServer, type ServerProcess } from '../helpers/process.js';
import { hasRedis, startRedis } from '../helpers/redis.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';

// The deployment of docs/operations.md "Processes", on one machine: one PostgreSQL started from the
// embedded binaries as a standalone server, Redis when redis-server is installed, an SMTP sink, and
// ROLE=api / ROLE=worker processes started as `npm start` starts the server, all on loopback.

export const CLUSTER_SECRET = 'cluster-secret-0123456789abcdefghijklmnopqrstuvwxyz';

export interface ClusterOptions {
  apis: number;
  workers: number;
  /** Extra environment of every process. */
  env?: Record<string, string>;
  /** Extra environment of the worker processes only. */
  workerEnv?: Record<string, string>;
}

export interface Cluster {
  readonly databaseUrl: string;
  readonly redisUrl: string | undefined;
  readonly sink: SmtpSink;
  readonly apis: ServerProcess[];
  readonly workers: ServerProcess[];
  /** The API base URLs; `base(i)` alternates between them. */
  base(i: number): string;
  /** A read-only query on the cluster's database. */
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]>;
  /** `npm run admin -- …` against the cluster's database. */
  admin(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

/** Starts the database, Redis (when installed), the sink, then the API and worker processes at once. */
export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const root = mkdtempSync(path.join(tmpdir(), 'mailplatform-cluster-'));
  const database: EmbeddedDatabase = await startEmbeddedPostgres({ dir: path.join(root, 'postgres') });
  const redis = hasRedis() ? await startRedis() : undefined;
  const sink = await startSmtpSink({ keepRaw: false });
  const client = new pg.Pool({ connectionString: database.url, max: 2 });
  const common = {
    DATABASE_URL: database.url,
    SECRET: CLUSTER_SECRET,
    SMTP_URL: sink.url,
    ...(redis ? { REDIS_URL: redis.url } : {}),
    ...opts.env,
  };
  const start = async (role: 'api' | 'worker', i: number): Promise<ServerProcess> => {
    const port = await freePort();
    const env = { ...common, ...(role === 'worker' ? opts.workerEnv : {}), ROLE: role, PORT: String(port), DATA_DIR: path.join(root, `${role}-${i}`) };
    return startServer(env);
  };
  const apis = await Promise.all(Array.from({ length: opts.apis }, (_, i) => start('api', i)));
  const workers = await Promise.all(Array.from({ length: opts.workers }, (_, i) => start('worker', i)));
  await Promise.all([
    ...apis.map((a) => a.waitForHealth(120_000)),
    ...workers.map((w) => w.waitForLog(/^ready: worker running$/, 120_000)),
  ]);
  return {
    databaseUrl: database.url,
    redisUrl: redis?.url,
    sink,
    apis,
    workers,
    base: (i) => `http://127.0.0.1:${apis[i % apis.length]?.port ?? 0}`,
    async query(sql, params) {
      return (await client.query(sql, params)).rows;
    },
    admin: (args) => runCli(args, { dataDir: path.join(root, 'cli'), env: { DATABASE_URL: database.url, SECRET: CLUSTER_SECRET } }),
    async stop() {
      await cleanupServers();
      await client.end();
      await sink.close();
      await redis?.stop();
      await database.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
