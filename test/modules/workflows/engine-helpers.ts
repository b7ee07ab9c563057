import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import type { ExecutionStatus, StepExecutionStatus, WorkflowBranch, WorkflowStepType } from '../../../src/db/schema.js';
import { bearer, type TestProject } from '../../helpers/accounts.js';
import { until } from '../../helpers/poll.js';

export interface StepSpec {
  key: string;
  type: WorkflowStepType;
  config?: object;
  templateId?: string;
}

export interface BuiltWorkflow {
  id: string;
  /** Step ids by key; `trigger` is the TRIGGER step. */
  steps: Record<string, string>;
}

/**
 * A workflow written directly as rows (the definitions' validation is tested elsewhere):
 * TRIGGER plus `steps`, and `edges` [from, to, branch?] by key (`trigger` names the TRIGGER step).
 */
export async function createWorkflow(
  db: Db,
  projectId: string,
  spec: { eventName: string; enabled?: boolean; allowReentry?: boolean; steps: StepSpec[]; edges: [string, string, WorkflowBranch?][] },
): Promise<BuiltWorkflow> {
  const wf = await db.db
    .insertInto('workflows')
    .values({ project_id: projectId, name: `wf ${spec.eventName}`, trigger_config: JSON.stringify({ eventName: spec.eventName }), enabled: spec.enabled ?? true, allow_reentry: spec.allowReentry ?? false })
    .returning('id')
    .executeTakeFirstOrThrow();
  const steps: Record<string, string> = {};
  for (const s of [{ key: 'trigger', type: 'TRIGGER' as const, config: {} }, ...spec.steps]) {
    const row = await db.db
      .insertInto('workflow_steps')
      .values({ project_id: projectId, workflow_id: wf.id, type: s.type, name: s.key, config: JSON.stringify(s.config ?? {}), template_id: 'templateId' in s ? s.templateId ?? null : null })
      .returning('id')
      .executeTakeFirstOrThrow();
    steps[s.key] = row.id;
  }
  for (const [from, to, branch] of spec.edges) {
    const fromId = steps[from];
    const toId = steps[to];
    if (!fromId || !toId) throw new Error(`unknown step in edge ${from} -> ${to}`);
    await db.db.insertInto('workflow_transitions').values({ project_id: projectId, workflow_id: wf.id, from_step_id: fromId, to_step_id: toId, branch: branch ?? null }).execute();
  }
  return { id: wf.id, steps };
}

/** POST /v1/track (public key); the event is committed when this returns. */
export async function track(app: FastifyInstance, project: TestProject, body: { email: string; event: string; data?: object; subscribed?: boolean }) {
  const res = await app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: body });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<{ data: { contact: string; event: string } }>().data;
}

export const executionsOf = (db: Db, workflowId: string) =>
  db.db.selectFrom('workflow_executions').selectAll().where('workflow_id', '=', workflowId).orderBy('started_at').orderBy('id').execute();

export async function stepsOf(db: Db, executionId: string) {
  const { rows } = await sql<{ id: string; key: string; type: WorkflowStepType; status: StepExecutionStatus; branch: WorkflowBranch | null; output: unknown; error: string | null; attempts: number }>`
    SELECT se.id, s.name AS key, s.type, se.status, se.branch, se.output, se.error, se.attempts
    FROM workflow_step_executions se JOIN workflow_steps s ON s.id = se.step_id
    WHERE se.execution_id = ${executionId}::uuid
    ORDER BY se.created_at, s.created_at, se.id`.execute(db.db); // visits of one transaction share created_at (and v7 ids of one millisecond are not ordered): the steps were written in graph order
  return rows;
}

/** Polls until the workflow has `count` executions, all in one of `statuses`; returns them. */
export async function waitForExecutions(db: Db, workflowId: string, count: number, statuses: readonly ExecutionStatus[], timeoutMs = 20_000) {
  let rows = await executionsOf(db, workflowId);
  await until(
    `${count} executions ${statuses.join('/')}`,
    async () => {
      rows = await executionsOf(db, workflowId);
      return rows.length === count && rows.every((r) => statuses.includes(r.status));
    },
    { timeoutMs, intervalMs: 25, why: () => JSON.stringify(rows.map((r) => ({ status: r.status, error: r.error }))) },
  );
  return rows;
}

/** Workflow jobs left in graphile-worker's queue (all, or those whose payload mentions `like`). */
export async function workflowJobs(db: Db, like?: string) {
  const { rows } = await sql<{ id: string; key: string | null; task: string; payload: unknown; run_at: Date; locked_at: Date | null; attempts: number }>`
    SELECT j.id::text, j.key, t.identifier AS task, j.payload, j.run_at, j.locked_at, j.attempts
    FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
    WHERE t.identifier IN ('workflow-events', 'workflow-step') AND (${like ?? null}::text IS NULL OR j.payload::text LIKE '%' || ${like ?? ''}::text || '%')`.execute(db.db);
  return rows;
}

/**
 * Enrolment still to do for a project (migration 0018): its events in `workflow_event_queue` and
 * its `workflow-events` jobs (keyed `workflow-events:<project>`, or a running one whose key
 * graphile-worker cleared: matched by the payload's projectId).
 */
export async function enrolmentPending(db: Db, projectId: string) {
  const { rows } = await sql<{ queued: number; jobs: number }>`
    SELECT (SELECT count(*)::int FROM workflow_event_queue WHERE project_id = ${projectId}::uuid) AS queued,
           (SELECT count(*)::int FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t ON t.id = j.task_id
            WHERE t.identifier = 'workflow-events' AND j.payload ->> 'projectId' = ${projectId}) AS jobs`.execute(db.db);
  return rows[0] ?? { queued: 0, jobs: 0 };
}

/** Queue rows of these events (migration 0018). */
export async function queuedEvents(db: Db, eventIds: readonly string[]) {
  return db.db.selectFrom('workflow_event_queue').selectAll().where('event_id', 'in', eventIds.length ? [...eventIds] : ['00000000-0000-0000-0000-000000000000']).execute();
}
