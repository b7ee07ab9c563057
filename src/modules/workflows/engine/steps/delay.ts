import { sql } from 'kysely';
import { DelayConfig, delaySeconds } from '../../steps.schema.js';
import { enqueueStepJobs } from '../jobs.js';
import { emptyResults, type StepHandler } from '../types.js';
import { enterWaiting } from './waiting.js';

/**
 * DELAY: a PENDING step execution becomes WAITING until due_at (its execution WAITING too), with
 * its job at run_at = due_at; when that job finds it due, it COMPLETES and the execution moves on.
 */
export const delay: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const pending = rows.filter((r) => r.status === 'PENDING');
  if (pending.length > 0) {
    const seconds = delaySeconds(DelayConfig.parse(pending[0]?.config));
    await enterWaiting(ctx, pending, { dueIn: sql`${seconds}::double precision * interval '1 second'` });
  }
  const { rows: nowRows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(ctx.trx);
  const now = nowRows[0]?.now ?? new Date();
  const early: typeof rows = [];
  for (const row of rows.filter((r) => r.status === 'WAITING')) {
    if (row.dueAt === null || row.dueAt <= now) results.done.push({ row, branch: null, output: { dueAt: row.dueAt } });
    else early.push(row);
  }
  // A job that ran before its step was due (re-enqueued by hand, clock change): wait again.
  await enqueueStepJobs(ctx.trx, ctx.projectId, early.map((r) => ({ id: r.id, stepId: r.stepId, runAt: r.dueAt })));
  return results;
};
