import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { failWorkflowStepBatch, runWorkflowStepBatch } from '../modules/workflows/index.js';
import type { JobDeps } from './deps.js';

export const WorkflowStepPayload = z.object({ projectId: z.uuid(), ids: z.array(z.uuid()).min(1) });

/**
 * Runs a batch of step executions of one workflow step (src/modules/workflows/engine). The
 * step execution rows are the claim: a job whose rows are finished, cancelled or not yet due does
 * nothing, so duplicates and leftovers are harmless. Transient failures throw (retried); after
 * the last attempt the batch's unfinished steps are FAILED with the error.
 */
export const workflowStep = (deps: JobDeps): Task => async (payload, helpers) => {
  const { projectId, ids } = WorkflowStepPayload.parse(payload);
  try {
    await runWorkflowStepBatch(deps, projectId, ids);
  } catch (err) {
    if (helpers.job.attempts >= helpers.job.max_attempts) await failWorkflowStepBatch(deps, projectId, ids, err);
    throw err;
  }
};
