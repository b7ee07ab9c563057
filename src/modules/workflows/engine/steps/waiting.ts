import { type RawBuilder, sql } from 'kysely';
import { enqueueStepJobs } from '../jobs.js';
import type { StepContext, StepRow } from '../types.js';

/** After this long a wait's job looks once for an event committed while the wait was being entered. */
export const WAIT_RECHECK_SECONDS = 15;

/**
 * PENDING → WAITING for DELAY and WAIT_FOR_EVENT rows of one step, set-based: due_at = now() +
 * `dueIn` (none: no due time), the executions WAITING (with the awaited event's name and the
 * wait's start for WAIT_FOR_EVENT), and one job per batch at due_at (`recheck`: no later than
 * WAIT_RECHECK_SECONDS from now).
 */
export async function enterWaiting(
  ctx: StepContext,
  rows: readonly StepRow[],
  opts: { dueIn?: RawBuilder<unknown>; waitEvent?: string; recheck?: boolean },
): Promise<void> {
  const { trx, projectId } = ctx;
  const { rows: updated } = await sql<{ due_at: Date | null; now: Date }>`
    WITH se AS (
      UPDATE workflow_step_executions se SET status = 'WAITING', started_at = now(),
        due_at = ${opts.dueIn ? sql`now() + ${opts.dueIn}` : sql`NULL::timestamptz`}
      WHERE se.project_id = ${projectId}::uuid AND se.id = ANY(${rows.map((r) => r.id)}::uuid[])
      RETURNING se.due_at
    ),
    x AS (
      UPDATE workflow_executions x SET status = 'WAITING', updated_at = now(),
        wait_event = ${opts.waitEvent ?? null}::text, wait_since = ${opts.waitEvent === undefined ? sql`NULL::timestamptz` : sql`now()`}
      WHERE x.project_id = ${projectId}::uuid AND x.id = ANY(${rows.map((r) => r.executionId)}::uuid[])
    )
    SELECT (SELECT due_at FROM se LIMIT 1) AS due_at, now() AS now`.execute(trx);
  const first = updated[0];
  if (!first) return;
  let runAt = first.due_at ?? undefined;
  if (opts.recheck) {
    const recheckAt = new Date(first.now.getTime() + WAIT_RECHECK_SECONDS * 1000);
    if (runAt === undefined || runAt > recheckAt) runAt = recheckAt;
  }
  if (runAt !== undefined) await enqueueStepJobs(trx, projectId, rows.map((r) => ({ id: r.id, stepId: r.stepId })), runAt);
}
