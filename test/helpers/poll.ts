/**
 * Polls `check` every `intervalMs` until it holds; throws naming `what` (and `why()`, for a
 * failure message) once `timeoutMs` has passed. For waiting on a state instead of sleeping.
 */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  opts: { timeoutMs?: number; intervalMs?: number; why?: () => string | Promise<string> } = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${opts.why ? `\n${await opts.why()}` : ''}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 20));
  }
}
