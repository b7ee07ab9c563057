import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type Kysely, sql, type Transaction } from 'kysely';
import { DatabaseBusyError } from '../db/connection.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import type { Database } from '../db/schema.js';
import { routeConfig } from './context.js';
import { ApiError, ErrorCode, validationError } from './errors.js';

const HEADER = 'idempotency-key';
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/** The Idempotency-Key of a request on an idempotent route. */
export interface IdempotencyClaim {
  readonly key: string;
  /**
   * Records the key inside the transaction that performs the request, so the work and
   * the key commit (or roll back) together. A concurrent request with the same key
   * waits for that transaction, then finds the key taken: exactly one is performed.
   * Throws 409 IDEMPOTENCY_KEY_REUSED when the key is already used.
   */
  claim(trx: Transaction<Database>, statusCode?: number): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency?: IdempotencyClaim & { claimed: boolean };
  }
}

interface Options {
  db: Kysely<Database>;
  ttlHours: number;
}

function readKey(request: FastifyRequest): string | undefined {
  const raw = request.headers[HEADER];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw.join(',') : raw;
  const problem =
    key.length < 1 ? { code: 'too_small', message: 'Idempotency-Key must not be empty' }
    : key.length > 255 ? { code: 'too_big', message: 'Idempotency-Key must be at most 255 characters' }
    : !PRINTABLE_ASCII.test(key) ? { code: 'invalid_string', message: 'Idempotency-Key must be printable ASCII' }
    : undefined;
  if (problem) throw validationError([{ field: 'Idempotency-Key', ...problem }]);
  return key;
}

/** The path recorded with a key: the URL without its query string. */
export const requestPath = (request: FastifyRequest) => request.url.split('?')[0] ?? request.url;

async function reusedError(db: Kysely<Database>, projectId: string, key: string): Promise<ApiError> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['method', 'path', 'status_code', 'created_at'])
    .where('project_id', '=', projectId)
    .where('key', '=', key)
    .executeTakeFirst();
  return new ApiError(409, ErrorCode.IDEMPOTENCY_KEY_REUSED, 'This Idempotency-Key was already used; the request was not performed again', {
    details: {
      key,
      ...(row && {
        originalRequest: { method: row.method, path: row.path },
        originalRequestAt: row.created_at.toISOString(),
        originalStatusCode: row.status_code,
      }),
    },
    suggestion: 'Send a new Idempotency-Key for a new request',
  });
}

/** The 409 IDEMPOTENCY_KEY_REUSED answer for a taken key, with its original request. */
export const idempotencyKeyReused = reusedError;

/**
 * Inserts the key unless a live (unexpired) one exists; an expired row is taken over.
 * Returns false when the key is taken.
 */
async function insertKey(
  db: Kysely<Database> | Transaction<Database>,
  row: { project_id: string; key: string; method: string; path: string; status_code: number },
  ttlHours: number,
): Promise<boolean> {
  const inserted = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['project_id', 'key'])
        .doUpdateSet({ method: row.method, path: row.path, status_code: row.status_code, created_at: sql`now()` })
        .where('idempotency_keys.created_at', '<', sql<Date>`now() - make_interval(hours => ${ttlHours})`),
    )
    .returning('key')
    .executeTakeFirst();
  return inserted !== undefined;
}

/**
 * The Idempotency-Key mechanism for routes declaring `config.idempotent`. Handlers that
 * write call `request.idempotency.claim(trx)` in their transaction; a 2xx answer
 * without a claim, and any 5xx (whose transaction rolled back), is recorded as the
 * answer is sent. A 4xx answer leaves the key free (its transaction rolled back).
 */
export const idempotencyPlugin = fp(
  async (app: FastifyInstance, opts: Options) => {
    app.decorateRequest('idempotency', undefined);

    /** A live key is answered 409; a free one becomes the claim the handler makes in its transaction. */
    const lookUp = async (request: FastifyRequest, project: { id: string }, key: string): Promise<void> => {
      const projectId = project.id;
      const live = await opts.db
        .selectFrom('idempotency_keys')
        .select('key')
        .where('project_id', '=', projectId)
        .where('key', '=', key)
        .where('created_at', '>=', sql<Date>`now() - make_interval(hours => ${opts.ttlHours})`)
        .executeTakeFirst();
      if (live) throw await reusedError(opts.db, projectId, key);
      const base = { project_id: projectId, key, method: request.method, path: requestPath(request) };
      request.idempotency = {
        key,
        claimed: false,
        async claim(trx, statusCode = 200) {
          if (this.claimed) return;
          if (!(await insertKey(trx, { ...base, status_code: statusCode }, opts.ttlHours))) {
            throw await reusedError(opts.db, projectId, key);
          }
          this.claimed = true;
        },
      };
    };
    // Callback hooks (here and below): a request without a key (nearly all) makes no promise.
    app.addHook('preHandler', (request, _reply, done) => {
      if (!routeConfig(request).idempotent || !request.project) return done();
      let key: string | undefined;
      try {
        key = readKey(request);
      } catch (err) {
        return done(err as Error);
      }
      if (key === undefined) return done();
      lookUp(request, request.project, key).then(() => done(), done);
    });

    // A 503 for want of a free database connection: the transaction of the request never began
    // (a connection is taken when it begins), so nothing was performed and the key stays free
    // for the retry that Retry-After asks for. A 503 for a database that went away: the key is
    // taken exactly if the transaction that claimed it committed (then the request was performed
    // and a retry is told so with 409), free otherwise. Neither is recorded like other 5xx answers.
    app.addHook('onError', (request, _reply, error, done) => {
      if (error instanceof DatabaseBusyError && !request.idempotency?.claimed) request.idempotency = undefined;
      if (isDatabaseUnavailable(error)) request.idempotency = undefined;
      done();
    });

    // Recorded before the answer leaves, so an immediate retry already finds the key.
    app.addHook('onSend', (request, reply, payload, done) => {
      const idem = request.idempotency;
      const status = reply.statusCode;
      if (!idem || !request.project || (status >= 400 && status < 500) || (idem.claimed && status < 500)) return done(null, payload);
      insertKey(
        opts.db,
        { project_id: request.project.id, key: idem.key, method: request.method, path: requestPath(request), status_code: status },
        opts.ttlHours,
      )
        .catch((err: unknown) => request.log.error({ err }, 'could not record Idempotency-Key'))
        .then(() => done(null, payload), done);
    });
  },
  { name: 'idempotency', dependencies: ['auth'] },
);

/** One key to claim with {@link claimIdempotencyKeys}. */
export interface KeyClaim {
  key: string;
  method: string;
  path: string;
  /** Recorded as the original answer's status. Default 200. */
  statusCode?: number;
}

/**
 * Claims many keys of one project in one statement, inside the transaction that performs
 * their requests (the set-based form of `request.idempotency.claim`, for group commit).
 * Keys must be distinct. A key already live is left alone; an expired one is taken over.
 * Returns the keys claimed: a key missing from the set is taken (answer 409). Rows are
 * inserted in key order, so concurrent claimers lock in one order and cannot deadlock.
 */
export async function claimIdempotencyKeys(
  trx: Transaction<Database>,
  projectId: string,
  claims: readonly KeyClaim[],
  ttlHours: number,
): Promise<Set<string>> {
  if (claims.length === 0) return new Set();
  const { rows } = await sql<{ key: string }>`
    INSERT INTO idempotency_keys (project_id, key, method, path, status_code)
    SELECT ${projectId}, t.key, t.method, t.path, t.status_code
    FROM unnest(${claims.map((c) => c.key)}::text[], ${claims.map((c) => c.method)}::text[],
                ${claims.map((c) => c.path)}::text[], ${claims.map((c) => c.statusCode ?? 200)}::int[])
      AS t(key, method, path, status_code)
    ORDER BY t.key
    ON CONFLICT (project_id, key) DO UPDATE
      SET method = EXCLUDED.method, path = EXCLUDED.path, status_code = EXCLUDED.status_code, created_at = now()
      WHERE idempotency_keys.created_at < now() - make_interval(hours => ${ttlHours})
    RETURNING key`.execute(trx);
  return new Set(rows.map((r) => r.key));
}

export { deleteExpiredIdempotencyKeys } from '../db/idempotency-keys.js';
