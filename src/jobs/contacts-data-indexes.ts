import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { reconcileDataIndexes, sweepDataIndexes } from '../modules/segments/index.js';
import type { JobDeps } from './deps.js';

/** Payload: `{projectId}` reconciles that project (queued when its segments change); none (cron) sweeps every project. */
const Payload = z.object({ projectId: z.uuid() }).partial();

/**
 * Data key indexes (docs/conditions.md, "Data key indexes"): builds the indexes a project's
 * segments can use and drops the others, CONCURRENTLY (contacts writes go on meanwhile).
 */
export const contactsDataIndexes =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { projectId } = Payload.parse(payload ?? {});
    const result = projectId ? await reconcileDataIndexes(deps.db, projectId) : await sweepDataIndexes(deps.db);
    if (result.built.length + result.dropped.length > 0) helpers.logger.info(`data key indexes: built ${result.built.join(', ') || '-'}; dropped ${result.dropped.join(', ') || '-'}`);
  };
