import type { Task } from 'graphile-worker';
import { drainUploadDeletions } from '../modules/uploads/index.js';
import type { JobDeps } from './deps.js';

/**
 * Removes the storage objects queued in upload_deletions (src/modules/uploads, docs/uploads.md
 * "Deletion"): enqueued with the deletion of an upload or a project, and hourly (cron) for
 * retries and uploads that never committed. No payload.
 */
export const uploadsDelete =
  (deps: JobDeps): Task =>
  async (_payload, helpers) => {
    const { deleted, failed, swept } = await drainUploadDeletions(deps);
    if (deleted > 0 || failed > 0 || swept > 0) helpers.logger.info(`uploads: ${deleted} objects deleted, ${failed} postponed, ${swept} temp files removed`);
  };
