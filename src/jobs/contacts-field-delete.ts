import type { Task } from 'graphile-worker';
import { runFieldDeleteJob } from '../modules/contacts/index.js';
import type { JobDeps } from './deps.js';
import { JobRowPayload, runJobRow } from './job-row.js';

/** DELETE /contacts/fields/:field on a large project: the key removed in resumable batches. */
export const contactsFieldDelete =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { jobId } = JobRowPayload.parse(payload);
    await runJobRow(deps.db, helpers, jobId, () => runFieldDeleteJob(deps.db, jobId, { signal: helpers.abortSignal }));
  };
