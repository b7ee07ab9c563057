import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { drainWorkflowEventQueue, handleWorkflowEvents, sweepWorkflowEventQueue } from '../modules/workflows/index.js';
import type { JobDeps } from './deps.js';

export const WorkflowEventsPayload = z.union([
  /** Migration 0018: drain the project's `workflow_event_queue` (`chunk`: events per transaction, default 1,000). */
  z.object({ projectId: z.uuid(), chunk: z.number().int().min(1).max(1000).optional() }),
  /** Migrations 0016/0017 (jobs queued before the upgrade): these events. */
  z.object({ eventIds: z.array(z.uuid()) }),
]);

/**
 * Enrols contacts and resumes waits for committed events: those queued for the project by the
 * events trigger (migration 0018, keyed job per project, see engine/queue.ts), or the ids of a job
 * queued before it. Set-based; a retry or a second run changes nothing.
 */
export const workflowEvents = (deps: JobDeps): Task => async (payload, helpers) => {
  const p = WorkflowEventsPayload.parse(payload);
  if ('eventIds' in p) {
    await handleWorkflowEvents(deps.db, p.eventIds);
    return;
  }
  const { dropped } = await drainWorkflowEventQueue(deps.db, p.projectId, p.chunk === undefined ? {} : { chunk: p.chunk });
  for (const d of dropped) helpers.logger.error(`workflow events: event ${d.eventId} of project ${p.projectId} not enrolled (permanent error): ${d.error}`);
};

/** Every minute: the keyed job again for every project whose queued events wait longer than a minute. */
export const workflowEventsSweep = (deps: JobDeps): Task => async (_payload, helpers) => {
  const projects = await sweepWorkflowEventQueue(deps.db);
  if (projects > 0) helpers.logger.info(`workflow events sweep: ${projects} project(s) re-enqueued`);
};
