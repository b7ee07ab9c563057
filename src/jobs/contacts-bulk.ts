import type { Task } from 'graphile-worker';
import { runBulkJob } from '../modules/contacts/index.js';
import type { JobDeps } from './deps.js';
import { JobRowPayload, runJobRow } from './job-row.js';

/** POST /contacts/bulk-*: one set-based statement over the job's contact ids (bulk.service). */
export const contactsBulk =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { jobId } = JobRowPayload.parse(payload);
    await runJobRow(deps.db, helpers, jobId, () => runBulkJob(deps.db, jobId));
  };
