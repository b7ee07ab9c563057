/**
 * Per-project cap, per worker process: a token bucket of one second's worth of emails
 * refilled at `perSecond` (GCRA). Each call reserves the next slot and says how long to wait.
 */
export function createProjectThrottle(perSecond: number) {
  const interval = 1000 / perSecond;
  const tolerance = 1000 - interval;
  const tat = new Map<string, number>();
  return {
    reserve(projectId: string, now = Date.now()): number {
      if (tat.size > 10_000) for (const [p, t] of tat) if (t < now) tat.delete(p);
      const t = Math.max(tat.get(projectId) ?? now, now);
      tat.set(projectId, t + interval);
      return Math.max(0, t - now - tolerance);
    },
  };
}
