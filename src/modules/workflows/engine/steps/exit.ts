import { ExitConfig } from '../../steps.schema.js';
import { emptyResults, type StepHandler } from '../types.js';

/** EXIT: the execution EXITED with the step's reason. */
export const exit: StepHandler = async (_ctx, rows) => {
  const results = emptyResults();
  const reason = ExitConfig.safeParse(rows[0]?.config ?? {}).data?.reason ?? null;
  for (const row of rows) results.exited.push({ row, reason });
  return results;
};

/** TRIGGER: recorded COMPLETED at enrolment; a PENDING one (never created by the engine) just moves on. */
export const trigger: StepHandler = async (_ctx, rows) => ({ ...emptyResults(), done: rows.map((row) => ({ row, branch: null })) });
