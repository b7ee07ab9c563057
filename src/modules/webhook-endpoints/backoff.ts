/**
 * The retry schedule of a failed delivery (docs/webhooks-outgoing.md "Retries"): exponential
 * from 30 s, doubling up to 3 hours, each delay spread ±25 % (jitter: the retries of a burst
 * do not all return at once), for 24 hours after the event was captured; the last attempt is at
 * the 24-hour mark, and a failure then gives the delivery up.
 */

export const FIRST_RETRY_MS = 30_000;
export const MAX_RETRY_DELAY_MS = 3 * 60 * 60 * 1000;
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Each delay is multiplied by a factor in [1 - JITTER, 1 + JITTER). */
export const JITTER = 0.25;

/** The wait after the `failedAttempts`-th failed attempt (1 for the first), before jitter. */
export function baseRetryDelayMs(failedAttempts: number): number {
  return Math.min(FIRST_RETRY_MS * 2 ** Math.max(failedAttempts - 1, 0), MAX_RETRY_DELAY_MS);
}

/**
 * When to try again after a failed attempt, or null to give up: `createdAt` is when the event
 * was captured, `failedAttempts` counts this one. `random` is in [0, 1) (default Math.random).
 */
export function nextAttemptAt(input: { createdAt: Date; failedAttempts: number; now: number; random?: () => number }): Date | null {
  const deadline = input.createdAt.getTime() + RETRY_WINDOW_MS;
  if (input.now >= deadline) return null;
  const factor = 1 - JITTER + 2 * JITTER * (input.random ?? Math.random)();
  const next = input.now + Math.round(baseRetryDelayMs(input.failedAttempts) * factor);
  return new Date(Math.min(next, deadline));
}
