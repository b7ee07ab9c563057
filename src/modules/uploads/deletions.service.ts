import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { uploadStorage } from './storage-of.js';
import { claimDueDeletions, deleteDeletions, enqueueDeletionJob, postponeDeletions } from './uploads.repo.js';

/** Keys per batch: one transaction and one storage call (S3 DeleteObjects) each. */
const BATCH = 200;
/** A run stops after this and queues the next one, so that one job never holds a worker for long. */
const MAX_RUN_MS = 60_000;
/** Temp files of interrupted local writes older than this are removed. */
const TEMP_MAX_AGE_MS = 3600_000;

export interface DrainResult {
  /** Objects removed (or found already gone). */
  deleted: number;
  /** Keys whose deletion failed, tried again later. */
  failed: number;
  /** Left-over temp files removed (local storage). */
  swept: number;
}

/**
 * The `uploads-delete` job: removes the due objects of upload_deletions, one batch per
 * transaction (rows locked with SKIP LOCKED: concurrent drains share the work). A key still
 * named by an upload row is never removed from storage, only dropped from the queue. A key the
 * storage refuses is postponed (2^attempts minutes, at most a day); a storage that cannot be
 * reached at all rolls the batch back and fails the job (graphile-worker retries it; the hourly
 * cron runs it anyway). Idempotent: an object already gone counts as deleted.
 */
export async function drainUploadDeletions(deps: { config: Config; db: Kysely<Database> }): Promise<DrainResult> {
  const storage = uploadStorage(deps.config);
  const result: DrainResult = { deleted: 0, failed: 0, swept: await storage.sweep(TEMP_MAX_AGE_MS) };
  const started = Date.now();
  for (;;) {
    const claimed = await deps.db.transaction().execute(async (trx) => {
      const due = await claimDueDeletions(trx, BATCH);
      const dead = due.filter((d) => !d.live);
      const failures = dead.length > 0 ? await storage.deleteMany(dead.map((d) => d.key)) : [];
      const failedKeys = new Map(failures.map((f) => [f.key, f.error]));
      await deleteDeletions(trx, due.filter((d) => !failedKeys.has(d.key)));
      await postponeDeletions(
        trx,
        dead.flatMap((d) => (failedKeys.has(d.key) ? [{ project_id: d.project_id, key: d.key, error: failedKeys.get(d.key) ?? 'failed' }] : [])),
      );
      result.deleted += dead.length - failures.length;
      result.failed += failures.length;
      return due.length;
    });
    if (claimed < BATCH) return result;
    if (Date.now() - started >= MAX_RUN_MS) {
      await enqueueDeletionJob(deps.db);
      return result;
    }
  }
}

