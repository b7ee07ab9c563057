import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { cancelPendingEmailsOfDisabledProject } from '../modules/emails/index.js';
import type { JobDeps } from './deps.js';
import { Tasks } from './queue.js';

export const ProjectMailCancelPayload = z.object({ projectId: z.uuid() });

const CHUNK = 1000;
const RUN_MS = 10_000;

/**
 * A disabled project's queued mail is cancelled (enqueued by the suspension, src/modules/security):
 * chunks of 1,000, each its own statement, for at most 10 s a run; what is left goes to a new
 * run of the same key. Re-enabled first: nothing. Idempotent (a retry cancels what is left).
 */
export const projectMailCancel = (deps: JobDeps): Task => async (payload, helpers) => {
  const { projectId } = ProjectMailCancelPayload.parse(payload);
  const started = Date.now();
  let total = 0;
  for (;;) {
    const cancelled = await cancelPendingEmailsOfDisabledProject(deps.db, projectId, CHUNK);
    total += cancelled;
    if (cancelled < CHUNK) break;
    if (Date.now() - started > RUN_MS) {
      await helpers.addJob(Tasks.projectMailCancel, { projectId }, { jobKey: `${Tasks.projectMailCancel}:${projectId}` });
      break;
    }
  }
  if (total > 0) helpers.logger.info(`cancelled ${total} queued emails of disabled project ${projectId}`);
};
