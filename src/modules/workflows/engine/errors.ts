import { ApiError } from '../../../lib/errors.js';

/** SQLSTATE classes worth a retry of the whole job: connection, transaction rollback (deadlock, serialization), resources, operator intervention. */
const RETRYABLE_CLASSES = new Set(['08', '40', '53', '57', '58']);

/**
 * Whether a step's error is transient (the job throws and graphile-worker retries it) rather than
 * a property of the step or its data (the step and execution are FAILED with the message).
 * PostgreSQL errors by SQLSTATE (plus lock_not_available); Node socket errors (ECONNRESET…) are transient.
 */
export function isRetryable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || err instanceof ApiError) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  if (/^[0-9A-Z]{5}$/.test(code)) return RETRYABLE_CLASSES.has(code.slice(0, 2)) || code === '55P03';
  return /^E[A-Z]+$/.test(code);
}

export const errorMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err)).slice(0, 1000);
