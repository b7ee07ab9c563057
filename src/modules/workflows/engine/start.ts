import { sql, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { advance } from './advance.js';

/**
 * Enrolments of one project are serialised (a transaction-scoped advisory lock): the re-entry
 * rules read committed executions, so two enrolments of one contact cannot both pass them.
 */
export async function lockEnrolment(trx: Transaction<Database>, projectId: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`workflow-enrol:${projectId}`}, 0))`.execute(trx);
}

/**
 * Starts new executions (just inserted, RUNNING, in this transaction): their TRIGGER step
 * execution is recorded COMPLETED and the step after it is created PENDING with its job; an
 * execution whose trigger leads nowhere completes at once.
 */
export async function startExecutions(trx: Transaction<Database>, projectId: string, executionIds: readonly string[]): Promise<void> {
  if (executionIds.length === 0) return;
  const { rows } = await sql<{ execution_id: string; step_id: string | null }>`
    WITH x AS (
      SELECT x.id, x.workflow_id, s.id AS step_id
      FROM workflow_executions x
      LEFT JOIN workflow_steps s ON s.project_id = x.project_id AND s.workflow_id = x.workflow_id AND s.type = 'TRIGGER'
      WHERE x.project_id = ${projectId}::uuid AND x.id = ANY(${executionIds}::uuid[])
    ),
    ins AS (
      INSERT INTO workflow_step_executions (project_id, execution_id, workflow_id, step_id, status, started_at, completed_at)
      SELECT ${projectId}::uuid, x.id, x.workflow_id, x.step_id, 'COMPLETED', now(), now() FROM x WHERE x.step_id IS NOT NULL
      ON CONFLICT DO NOTHING
    )
    SELECT x.id AS execution_id, x.step_id FROM x`.execute(trx);
  await advance(trx, projectId, rows.map((r) => ({ executionId: r.execution_id, stepId: r.step_id, branch: null })));
}
