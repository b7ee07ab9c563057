import type { Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { advance, completeStepExecutions } from './advance.js';
import { exitExecutions, failSteps } from './finish.js';
import type { StepResults } from './types.js';

/** Applies a handler's results: completions advance, failures and exits end their executions. */
export async function applyResults(trx: Transaction<Database>, projectId: string, results: StepResults): Promise<void> {
  await completeStepExecutions(trx, projectId, results.done.map((d) => ({ id: d.row.id, branch: d.branch, output: d.output })));
  await advance(trx, projectId, results.done.map((d) => ({ executionId: d.row.executionId, stepId: d.row.stepId, branch: d.branch })));
  await failSteps(trx, projectId, results.failed.map((f) => ({ id: f.row.id, executionId: f.row.executionId, error: f.error, output: f.output })));
  await exitExecutions(trx, projectId, results.exited.map((e) => ({ id: e.row.id, executionId: e.row.executionId, reason: e.reason })));
}
