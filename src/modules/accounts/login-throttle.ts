import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { clearThrottle, readThrottle, recordFailure, throttleKey } from './login-throttle.repo.js';

/** Lower-cased and trimmed: the form users.email is stored and looked up in. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/**
 * Per-account sign-in throttle (docs/accounts.md): a few free failures, then exponential
 * locks (1 s doubling to 15 min), shared by every API process through PostgreSQL. Keyed by
 * the typed email whether or not it is an account, so the throttle reveals nothing.
 */
export interface LoginThrottle {
  /**
   * Runs `verify` (the password check) unless the email is locked: then 429 before any
   * hashing. `verify` answering undefined counts a failure; a success clears earlier ones.
   */
  attempt<T>(email: string, verify: () => Promise<T | undefined>): Promise<T | undefined>;
}

export function lockedOut(retryAfterSeconds: number): ApiError {
  const at = new Date(Date.now() + retryAfterSeconds * 1000).toISOString();
  return new ApiError(
    429,
    ErrorCode.RATE_LIMIT_EXCEEDED,
    `Too many failed sign-in attempts for this account: try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'} (after ${at})`,
    {
      headers: { 'Retry-After': String(retryAfterSeconds) },
      details: { retryAfter: retryAfterSeconds, retryAt: at },
      suggestion: 'Wait until then, or ask an operator to reset the password (npm run admin -- reset-password)',
    },
  );
}

export function createLoginThrottle(db: Kysely<Database>): LoginThrottle {
  // Attempts for one email run one after another in this process: a burst sent in parallel
  // would otherwise pass the check together before the first failure is counted.
  const queues = new Map<string, Promise<unknown>>();

  async function once<T>(email: string, verify: () => Promise<T | undefined>): Promise<T | undefined> {
    const key = throttleKey(email);
    const state = await readThrottle(db, key);
    if (state?.retryAfterSeconds) throw lockedOut(state.retryAfterSeconds);
    const result = await verify();
    if (result === undefined) await recordFailure(db, key);
    else if (state) await clearThrottle(db, key);
    return result;
  }

  return {
    async attempt(rawEmail, verify) {
      const email = normaliseEmail(rawEmail);
      const before = queues.get(email) ?? Promise.resolve();
      const mine = before.then(
        () => once(email, verify),
        () => once(email, verify),
      );
      queues.set(email, mine);
      try {
        return await mine;
      } finally {
        if (queues.get(email) === mine) queues.delete(email);
      }
    },
  };
}
