import type { Task } from 'graphile-worker';
import { sql } from 'kysely';
import { z } from 'zod';
import { computeSegment, trackedSegmentIds } from '../modules/segments/index.js';
import type { JobDeps } from './deps.js';
import { JobPriority, Tasks } from './queue.js';

/** Payload: none from the crontab (fan out); `{segmentId, projectId}` recomputes that segment. */
const Payload = z.object({ segmentId: z.uuid(), projectId: z.uuid() }).partial();

/**
 * Cron, every 5 minutes: enqueues one job per tracked DYNAMIC segment, keyed by the segment id
 * (a run still waiting is replaced, never doubled). Each job runs the same code path and
 * advisory lock as POST /segments/:id/compute, so entry/exit events are recorded once.
 */
export const segmentsRecompute =
  (deps: JobDeps): Task =>
  async (payload, helpers) => {
    const { segmentId, projectId } = Payload.parse(payload ?? {});
    if (segmentId && projectId) {
      const result = await computeSegment(deps.db, projectId, segmentId);
      helpers.logger.debug(`segment ${segmentId} recomputed`, { ...result });
      return;
    }
    const segments = await trackedSegmentIds(deps.db);
    if (segments.length === 0) return;
    await sql`
      SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
        SELECT ROW(${Tasks.segmentsRecompute}::text, json_build_object('segmentId', t.id, 'projectId', t.project_id), NULL::text,
                   NULL::timestamptz, 3::int, t.id::text, ${JobPriority.maintenance}::int, NULL::text[])::graphile_worker.job_spec
        FROM unnest(${segments.map((s) => s.id)}::uuid[], ${segments.map((s) => s.project_id)}::uuid[]) AS t(id, project_id)
      ))`.execute(deps.db);
  };
