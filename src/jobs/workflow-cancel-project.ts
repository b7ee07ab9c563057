import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { cancelDisabledProjectExecutions } from '../modules/workflows/index.js';
import type { JobDeps } from './deps.js';

export const WorkflowCancelProjectPayload = z.object({ projectId: z.uuid() });

/**
 * A disabled project cancels its workflow executions (enqueued where a project is disabled: the
 * reputation check, the operator CLI). Chunked and idempotent: a retry cancels what is left.
 */
export const workflowCancelProject = (deps: JobDeps): Task => async (payload, helpers) => {
  const { projectId } = WorkflowCancelProjectPayload.parse(payload);
  const cancelled = await cancelDisabledProjectExecutions(deps.db, projectId);
  if (cancelled > 0) helpers.logger.info(`cancelled ${cancelled} workflow executions of disabled project ${projectId}`);
};
