import { sql } from 'kysely';
import { WaitForEventConfig } from '../../steps.schema.js';
import { resumeLocked } from '../events.js';
import { enqueueStepJobs } from '../jobs.js';
import { emptyResults, type StepHandler, type StepRow } from '../types.js';
import { enterWaiting } from './waiting.js';

/**
 * WAIT_FOR_EVENT: the execution WAITING for `eventName` from now (resumed by the events job,
 * engine/events.ts), the step execution WAITING until the timeout if any. This job runs again
 * WAIT_RECHECK_SECONDS later and at the timeout: it first looks for a matching event recorded
 * since the wait began (one committed while the wait was entered is seen by neither side's
 * trigger query), then times out (branch `timeout`) once due, else waits on. Both this job and the
 * events job hold the execution's row lock while deciding: exactly one branch is taken.
 */
export const waitForEvent: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const pending = rows.filter((r) => r.status === 'PENDING');
  if (pending.length > 0) {
    const config = WaitForEventConfig.parse(pending[0]?.config);
    await enterWaiting(ctx, pending, {
      dueIn: config.timeout === undefined ? undefined : sql`${config.timeout}::double precision * interval '1 second'`,
      waitEvent: config.eventName,
      recheck: true,
    });
  }
  const waiting = rows.filter((r) => r.status === 'WAITING');
  if (waiting.length === 0) return results;
  const resumed = new Set(await resumeLocked(ctx.trx, ctx.projectId, waiting.map((r) => r.executionId), sql`TRUE`));
  const { rows: nowRows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(ctx.trx);
  const now = nowRows[0]?.now ?? new Date();
  const later: StepRow[] = [];
  for (const row of waiting) {
    if (resumed.has(row.executionId)) continue;
    if (row.dueAt !== null && row.dueAt <= now) results.done.push({ row, branch: 'timeout', output: { timedOut: true } });
    else if (row.dueAt !== null) later.push(row);
  }
  await enqueueStepJobs(ctx.trx, ctx.projectId, later.map((r) => ({ id: r.id, stepId: r.stepId, runAt: r.dueAt })));
  return results;
};
