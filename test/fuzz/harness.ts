import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { buildApp } from '../../src/app.js';
import { createAppDeps } from '../../src/app-deps.js';
import { loadConfig, type Config } from '../../src/config.js';
import { connect, type Db } from '../../src/db/connection.js';
import { memoryStore } from '../../src/http/rate-limit.js';
import { openApiDocument } from '../../scripts/openapi.js';
import { TEST_SECRET } from '../helpers/app.js';
import { startDnsServer, type TestDnsServer } from '../helpers/dns-server.js';
import { committedSince, type FuzzCluster, snapshot, startFuzzCluster } from './cluster.js';
import { type Doc, type GroupName, GROUPS, type Operation, operationsOf } from './operations.js';
import { badCredentialArbitrary, type FuzzRequest, requestArbitrary } from './requests.js';
import { type FuzzWorld, seedWorld } from './seed.js';

/**
 * The document the fuzzer reads, built as the server builds it (scripts/openapi.ts: the real
 * routes, no database); each file also checks it is what its app serves at /openapi.json.
 * Read at collection time so that each operation is a test of its own.
 */
export const DOC = (await openApiDocument()) as unknown as Doc;
export const OPERATIONS = operationsOf(DOC);

/**
 * Requests per operation, and fewer for those that hash a password (argon2: ~50 ms each) or
 * store a file. FUZZ_RUNS multiplies both (a longer run by hand: FUZZ_RUNS=10).
 */
const SCALE = Number(process.env.FUZZ_RUNS ?? 1);
export const RUNS = Math.round(64 * SCALE);
const SLOW_RUNS = Math.round(24 * SCALE);
const SLOW = new Set(['POST /auth/signup', 'POST /auth/login', 'POST /auth/reset-password', 'POST /auth/accept-invitation', 'POST /contacts/import', 'POST /uploads/image']);
export const runsOf = (op: Operation) => (SLOW.has(op.id) ? SLOW_RUNS : RUNS);
/** Requests per operation with a wrong or missing credential. */
export const CREDENTIAL_RUNS = 10;

/**
 * 4xx answers that may write, each for a documented reason. Anything else answered 4xx that
 * commits a transaction fails the run.
 */
export const WRITES_ON_4XX: readonly { op: string; status: number; reason: string }[] = [
  {
    op: 'POST /auth/login',
    status: 401,
    reason: 'a failed sign-in is counted against its address (login_throttles; docs/accounts.md): the throttle exists to record it',
  },
];

/** The seed of the run: FUZZ_SEED, else a random one (printed, to reproduce a failure). */
export const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

/** Each operation its own seed derived from the run's, so one operation re-runs alone the same way. */
function seedOf(op: Operation): number {
  let h = SEED >>> 0;
  for (const ch of op.id) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return h | 0;
}

export const operationsOfGroup = (group: GroupName) => OPERATIONS.filter((op) => GROUPS[group](op.path)).sort((a, b) => lastOnes(a) - lastOnes(b));
/** Deleting the victim project runs after every other operation of its group (which act on it). */
const lastOnes = (op: Operation) => (op.id === 'DELETE /users/@me/projects/{id}' ? 1 : 0);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * Why a 4xx answer is not in the spec's error envelope (SPEC "Errors"), or undefined. Written
 * out here rather than taken from src: `{success: false, message, error: {code, message,
 * statusCode, requestId, errors?, details?, suggestion?}, timestamp}`, the request id also in
 * X-Request-Id. The one exception is the legacy flat `{error}` body, allowed only where the
 * document says the operation answers it (contacts, segments, templates: SPEC "Legacy body").
 */
export function envelopeProblem(op: Operation, res: LightMyRequestResponse): string | undefined {
  const type = String(res.headers['content-type'] ?? '');
  if (!/^application\/json/.test(type)) return `Content-Type ${type || '(none)'}`;
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return 'not JSON';
  }
  if (typeof body !== 'object' || body === null) return 'not an object';
  const b = body as Record<string, unknown>;
  const documented = JSON.stringify(op.responses[String(res.statusCode)] ?? {});
  if (documented.includes('LegacyError') && Object.keys(b).length === 1 && typeof b.error === 'string') return undefined;
  const extra = Object.keys(b).filter((k) => !['success', 'message', 'error', 'timestamp'].includes(k));
  if (extra.length) return `unexpected top-level ${extra.join(', ')}`;
  if (b.success !== false) return 'success is not false';
  if (typeof b.message !== 'string') return 'no top-level message';
  if (typeof b.timestamp !== 'string' || !TIMESTAMP.test(b.timestamp)) return `timestamp ${String(b.timestamp)}`;
  const e = b.error as Record<string, unknown> | undefined;
  if (typeof e !== 'object' || e === null) return 'no error object';
  const extraError = Object.keys(e).filter((k) => !['code', 'message', 'statusCode', 'requestId', 'errors', 'details', 'suggestion'].includes(k));
  if (extraError.length) return `unexpected error.${extraError.join(', ')}`;
  if (typeof e.code !== 'string' || !e.code) return 'no error.code';
  if (typeof e.message !== 'string') return 'no error.message';
  if (e.statusCode !== res.statusCode) return `error.statusCode ${String(e.statusCode)}`;
  if (typeof e.requestId !== 'string' || !UUID.test(e.requestId)) return `error.requestId ${String(e.requestId)}`;
  if (res.headers['x-request-id'] !== e.requestId) return 'X-Request-Id is not error.requestId';
  if (e.errors !== undefined) {
    if (!Array.isArray(e.errors)) return 'error.errors is not an array';
    for (const f of e.errors as Record<string, unknown>[]) {
      if (typeof f.field !== 'string' || typeof f.message !== 'string' || typeof f.code !== 'string') return `field error ${JSON.stringify(f)}`;
    }
  }
  if (e.details !== undefined && (typeof e.details !== 'object' || e.details === null || Array.isArray(e.details))) return 'error.details is not an object';
  if (e.suggestion !== undefined && typeof e.suggestion !== 'string') return 'error.suggestion is not a string';
  return undefined;
}

export interface Totals {
  requests: number;
  byClass: Record<string, number>;
  /** 4xx answers that wrote, allowed by {@link WRITES_ON_4XX}. */
  whitelistedWrites: number;
  /** Statuses answered that the operation does not document: `METHOD /path` → statuses. */
  undocumented: Map<string, Set<number>>;
  /** Answers by operation and status (printed with FUZZ_VERBOSE=1). */
  byOperation: Map<string, Record<number, number>>;
}

export class FuzzHarness {
  cluster!: FuzzCluster;
  app!: FastifyInstance;
  db!: Db;
  config!: Config;
  world!: FuzzWorld;
  private dns!: TestDnsServer;
  private hot!: Db;
  readonly totals: Totals = { requests: 0, byClass: {}, whitelistedWrites: 0, undocumented: new Map(), byOperation: new Map() };

  constructor(readonly group: string) {}

  async start(): Promise<void> {
    this.cluster = await startFuzzCluster();
    // Domain checks and /v1/verify ask a DNS server on loopback that knows no name (NXDOMAIN).
    this.dns = await startDnsServer();
    this.config = loadConfig({
      DATABASE_URL: this.cluster.url,
      SECRET: TEST_SECRET,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: '1000000',
      SIGNIN_RATE_LIMIT_PER_MINUTE: '1000000',
      DNS_SERVERS: this.dns.address,
      DATA_DIR: this.cluster.dataDir,
    });
    this.db = connect(this.cluster.url, { max: 10 });
    this.hot = connect(this.cluster.url, { max: 4, genericPlans: true });
    // No job worker and no key cache: nothing runs beside the requests (the write check needs it).
    this.app = await buildApp({ ...createAppDeps(this.config, this.db.db), hotDb: this.hot.db }, { rateLimitStore: memoryStore() });
    await this.app.ready();
    this.world = await seedWorld(this.app, { db: this.db, config: this.config });
  }

  async stop(): Promise<void> {
    await this.app?.close();
    await Promise.all([this.db?.close(), this.hot?.close()]);
    await this.dns?.close();
    await this.cluster?.stop();
  }

  /** Sends one request and checks the three properties; throws describing the request on a failure. */
  async exercise(op: Operation, req: FuzzRequest, expectRefusal = false): Promise<LightMyRequestResponse> {
    const before = await snapshot(this.cluster.probe);
    const res = await this.app.inject({ method: req.method as 'GET', url: req.url, headers: req.headers, payload: req.payload });
    const status = res.statusCode;
    this.totals.requests++;
    const cls = `${Math.floor(status / 100)}xx`;
    this.totals.byClass[cls] = (this.totals.byClass[cls] ?? 0) + 1;
    const statuses = this.totals.byOperation.get(op.id) ?? {};
    this.totals.byOperation.set(op.id, { ...statuses, [status]: (statuses[status] ?? 0) + 1 });
    if (!(String(status) in op.responses) && status >= 400) {
      const seen = this.totals.undocumented.get(op.id) ?? new Set<number>();
      this.totals.undocumented.set(op.id, seen.add(status));
    }
    const describe = (problem: string) => {
      const payload = req.payload === undefined ? '(none)' : typeof req.payload === 'string' ? req.payload.slice(0, 300) : `<${req.payload.length} bytes>`;
      return `${problem}\n  ${req.method} ${req.url.slice(0, 300)}\n  mutation: ${req.note || '(valid)'}\n  headers: ${JSON.stringify(req.headers).slice(0, 400)}\n  body: ${payload}\n  → ${status} ${res.body.slice(0, 500)}\n  reproduce: FUZZ_SEED=${SEED} npx vitest run test/fuzz/${this.group}.test.ts -t '${op.id}'`;
    };
    if (status >= 500) throw new Error(describe(`${status} answer`));
    if (expectRefusal && status !== 401 && status !== 403) throw new Error(describe('a wrong or missing credential was not refused with 401 or 403'));
    if (status >= 400) {
      const problem = envelopeProblem(op, res);
      if (problem) throw new Error(describe(`4xx outside the error envelope: ${problem}`));
      const written = await committedSince(this.cluster.probe, before);
      if (written.length) {
        if (!WRITES_ON_4XX.some((w) => w.op === op.id && w.status === status)) throw new Error(describe(`a ${status} answer committed ${written.length} transaction(s)`));
        this.totals.whitelistedWrites++;
      }
    }
    return res;
  }

  /** fast-check over one operation: `runs` valid and near-valid requests. */
  async fuzz(op: Operation, runs: number): Promise<void> {
    const arbitrary = requestArbitrary(op, this.world, DOC.components.schemas);
    await fc.assert(
      fc.asyncProperty(arbitrary, async (req) => {
        await this.exercise(op, req);
      }),
      { numRuns: runs, seed: seedOf(op), endOnFailure: true },
    );
  }

  /** fast-check over one operation with wrong or missing credentials: each refused. */
  async fuzzCredentials(op: Operation, runs: number): Promise<void> {
    const arbitrary = badCredentialArbitrary(op, this.world, DOC.components.schemas);
    await fc.assert(
      fc.asyncProperty(arbitrary, async (req) => {
        await this.exercise(op, req, !/\bpath \w+=/.test(req.note));
      }),
      { numRuns: runs, seed: seedOf(op), endOnFailure: true },
    );
  }

  /** The per-run totals line (printed after each file). */
  report(): string {
    const classes = Object.entries(this.totals.byClass).sort().map(([k, v]) => `${k} ${v}`).join(', ');
    const undocumented = [...this.totals.undocumented].map(([op, s]) => `${op}: ${[...s].join(',')}`);
    return (
      `fuzz ${this.group}: ${this.totals.requests} requests (${classes}); 4xx writes allowed by the whitelist: ${this.totals.whitelistedWrites}; seed ${SEED}` +
      (undocumented.length ? `\n  statuses answered but not documented: ${undocumented.join('; ')}` : '') +
      (process.env.FUZZ_VERBOSE ? [...this.totals.byOperation].map(([op, s]) => `\n  ${op}: ${JSON.stringify(s)}`).join('') : '')
    );
  }
}

/** The requests the four groups and the credential file make, in all (at least 10,000). */
export function plannedTotal(): number {
  const secured = OPERATIONS.filter((op) => op.security.length > 0).length;
  return OPERATIONS.reduce((n, op) => n + runsOf(op), 0) + secured * CREDENTIAL_RUNS;
}
