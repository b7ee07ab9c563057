import type { JobHelpers } from 'graphile-worker';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../db/schema.js';
import { failJob } from '../modules/contacts/index.js';

/** Payload of every task that works on a `jobs` status row. */
export const JobRowPayload = z.strictObject({ jobId: z.uuid() });

/**
 * Runs the work of a `jobs` row. A failure is thrown so graphile-worker retries it; on the last
 * attempt the row is marked FAILED first, so a poller never waits on PROCESSING forever. The
 * message is generic: the cause goes to the log, not to API callers.
 */
export async function runJobRow(db: Kysely<Database>, helpers: JobHelpers, jobId: string, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    const { attempts, max_attempts: maxAttempts } = helpers.job;
    helpers.logger.error(`job ${jobId} failed (attempt ${attempts} of ${maxAttempts}): ${err instanceof Error ? err.message : String(err)}`);
    if (attempts >= maxAttempts) {
      const tries = attempts === 1 ? '1 attempt' : `${attempts} attempts`;
      await failJob(db, jobId, `Processing failed after ${tries}; the operator can find job ${jobId} in the logs`);
    }
    throw err;
  }
}
