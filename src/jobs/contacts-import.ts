import type { Task } from 'graphile-worker';
import { runImportJob } from '../modules/contacts/index.js';
import type { JobDeps } from './deps.js';
import { JobRowPayload, runJobRow } from './job-row.js';

/** POST /contacts/import: the stored CSV parsed and upserted in resumable batches. */
export const contactsImport =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { jobId } = JobRowPayload.parse(payload);
    await runJobRow(deps.db, helpers, jobId, () => runImportJob(deps.db, jobId, { signal: helpers.abortSignal }));
  };
