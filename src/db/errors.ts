/** True for PostgreSQL's unique_violation (23505), optionally on one constraint. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; constraint?: unknown };
  return e.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** Socket errors of a connection to PostgreSQL that could not be opened or was cut. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** node-postgres's errors for a connection that ended under a query (no code of their own). */
const CONNECTION_ENDED = /^(Connection terminated|Client has encountered a connection error|Connection ended unexpectedly)/;

/**
 * True when PostgreSQL could not be reached or went away under the statement: a server down,
 * restarting or shutting down (SQLSTATE class 08, 57P01–57P03), out of connection slots (53300),
 * a refused or cut socket. What the statement did is then unknown only if the connection broke
 * during its COMMIT; the request paths answer 503 with Retry-After (src/http/error-handler.ts),
 * which clients retry, with their Idempotency-Key where a repeat matters.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (UNREACHABLE.has(code) || code.startsWith('08') || ['57P01', '57P02', '57P03', '53300'].includes(code))) return true;
    if (typeof message === 'string' && CONNECTION_ENDED.test(message)) return true;
  }
  return false;
}
