import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { handleWorkflowEvents } from '../modules/workflows/index.js';
import type { JobDeps } from './deps.js';

export const WorkflowEventsPayload = z.object({ eventIds: z.array(z.uuid()) });

/**
 * Enrols contacts and resumes waits for committed events (enqueued by the events trigger of
 * migration 0016). Set-based; a retry or a second run on the same ids changes nothing.
 */
export const workflowEvents = (deps: JobDeps): Task => async (payload) => {
  const { eventIds } = WorkflowEventsPayload.parse(payload);
  await handleWorkflowEvents(deps.db, eventIds);
};
