import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { takeSendSlot } from '../send-slots.repo.js';

/** The instance's sending-rate settings (config PROJECT_SENDING_RATE, MAX_PROJECT_SENDING_RATE). */
export interface SendingRates {
  /** Emails per second of a project whose own rate is null; undefined: unlimited. */
  default?: number;
  /** The operator's cap on every project's rate; undefined: none. */
  max?: number;
}

/** A project's effective rate in emails per second: its own or the default, never above the cap; undefined: unlimited. */
export function effectiveRate(projectRate: number | null, rates: SendingRates): number | undefined {
  const rate = projectRate ?? rates.default;
  if (rate === undefined) return rates.max;
  return rates.max === undefined ? rate : Math.min(rate, rates.max);
}

/**
 * Per-project cap shared by every worker process: a token bucket of one second's worth of
 * emails (at least one) refilled at the project's rate, kept in PostgreSQL as a GCRA arrival
 * time (send-slots.repo.ts). Each call reserves the next slot and says how long to wait. A
 * project without a rate costs nothing (no query).
 */
export function createProjectThrottle(db: Kysely<Database>, rates: SendingRates) {
  return {
    async reserve(projectId: string | null, projectRate: number | null): Promise<number> {
      if (projectId === null) return 0; // SYSTEM emails belong to no project
      const rate = effectiveRate(projectRate, rates);
      if (rate === undefined) return 0;
      const intervalMs = 1000 / rate;
      return takeSendSlot(db, { projectId, intervalMs, toleranceMs: Math.max(0, 1000 - intervalMs) });
    },
  };
}
