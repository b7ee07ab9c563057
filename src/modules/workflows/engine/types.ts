import type { Transaction } from 'kysely';
import type { JobDeps } from '../../../jobs/deps.js';
import type { Database, WorkflowBranch, WorkflowStepType } from '../../../db/schema.js';

/** A step execution a job may act on, with what its step needs (the execution row is locked). */
export interface StepRow {
  id: string;
  executionId: string;
  workflowId: string;
  stepId: string;
  type: WorkflowStepType;
  config: unknown;
  status: 'PENDING' | 'WAITING' | 'RUNNING';
  dueAt: Date | null;
  attempts: number;
  contactId: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  event: Record<string, unknown>;
  context: Record<string, unknown>;
  startedAt: Date;
}

/** What a step handler decided per row; rows it left out it has dealt with itself (waits). */
export interface StepResults {
  done: { row: StepRow; branch: WorkflowBranch | null; output?: unknown }[];
  failed: { row: StepRow; error: string; output?: unknown }[];
  exited: { row: StepRow; reason: string | null }[];
}

export interface StepContext {
  trx: Transaction<Database>;
  deps: JobDeps;
  projectId: string;
}

/** Runs the rows of ONE step (same type and config), set-based where the type allows. */
export type StepHandler = (ctx: StepContext, rows: StepRow[]) => Promise<StepResults>;

export const emptyResults = (): StepResults => ({ done: [], failed: [], exited: [] });
