import { type Kysely, sql } from 'kysely';
import type { Database, WorkflowStepType } from '../../db/schema.js';
import { CONTACT_EVENT_TYPES, EMAIL_EVENT_TYPES } from './activity.rules.js';

/** Whether the project has any item of the types that need no name scan (each an index probe). */
export interface PresenceRow {
  names: Record<string, boolean>;
  campaign_scheduled: boolean;
  campaign_sent: boolean;
  workflow_started: boolean;
  workflow_completed: boolean;
  workflow_failed: boolean;
}

/**
 * One statement of probes: one per system event name along (project_id, name, created_at), the
 * project's campaigns (a few rows), and per workflow of the project along
 * workflow_executions_list_idx (project_id, workflow_id, status, …).
 */
export async function findPresence(db: Kysely<Database>, projectId: string): Promise<PresenceRow> {
  const p = sql`${projectId}::uuid`;
  const names = [...EMAIL_EVENT_TYPES, ...CONTACT_EVENT_TYPES];
  // Newest row by the index, not EXISTS: for a frequent name the planner would rather start a
  // sequential scan expecting an early match, which reads the table up to the name's first row
  // (1.4 s for email.sent on the 10,000,000-event bench project).
  const probes = names.map(
    (n) => sql`${n}::text, (SELECT e.created_at FROM events e WHERE e.project_id = ${p} AND e.name = ${n} ORDER BY e.created_at DESC LIMIT 1) IS NOT NULL`,
  );
  const executions = (statuses: readonly string[]) => sql`EXISTS (
    SELECT 1 FROM workflows w
    WHERE w.project_id = ${p}
      AND EXISTS (SELECT 1 FROM workflow_executions x WHERE x.project_id = ${p} AND x.workflow_id = w.id AND x.status IN (${sql.join([...statuses])})))`;
  const { rows } = await sql<PresenceRow>`
    SELECT jsonb_build_object(${sql.join(probes)}) AS names,
      EXISTS (SELECT 1 FROM campaigns c WHERE c.project_id = ${p} AND c.scheduled_for IS NOT NULL AND c.status <> 'DRAFT'
              AND (c.status <> 'CANCELLED' OR c.cancelled_at >= c.scheduled_for)) AS campaign_scheduled,
      EXISTS (SELECT 1 FROM campaigns c WHERE c.project_id = ${p} AND c.status = 'SENT') AS campaign_sent,
      ${executions(['RUNNING', 'WAITING', 'COMPLETED', 'EXITED', 'FAILED', 'CANCELLED'])} AS workflow_started,
      ${executions(['COMPLETED', 'EXITED'])} AS workflow_completed,
      ${executions(['FAILED'])} AS workflow_failed`.execute(db);
  const row = rows[0];
  if (!row) throw new Error('presence query answered no row');
  return row;
}

export interface UpcomingRow {
  kind: 'campaign' | 'step';
  due_at: Date;
  id: string;
  campaign_id: string | null;
  campaign_name: string | null;
  campaign_subject: string | null;
  workflow_id: string | null;
  workflow_name: string | null;
  step_id: string | null;
  step_name: string | null;
  step_type: WorkflowStepType | null;
  execution_id: string | null;
  wait_event: string | null;
  contact_id: string | null;
  contact_email: string | null;
}

/**
 * Scheduled campaigns and WAITING step executions with a due time (DELAY ends, WAIT_FOR_EVENT
 * timeouts) due by `horizon`, soonest first (overdue ones, about to run, included): each source
 * along its index (campaigns_due_idx; workflow_step_executions_due_idx), merged, then joined.
 */
export async function findUpcoming(db: Kysely<Database>, projectId: string, opts: { horizon: Date; limit: number }): Promise<UpcomingRow[]> {
  const p = sql`${projectId}::uuid`;
  const horizon = sql`${opts.horizon.toISOString()}::timestamptz`;
  const { rows } = await sql<UpcomingRow>`
    WITH due AS MATERIALIZED (
      SELECT * FROM (
        (SELECT 'campaign' AS kind, c.scheduled_for AS due_at, c.id
         FROM campaigns c
         WHERE c.project_id = ${p} AND c.status = 'SCHEDULED' AND c.scheduled_for <= ${horizon}
         ORDER BY c.scheduled_for, c.id LIMIT ${opts.limit})
        UNION ALL
        (SELECT 'step' AS kind, se.due_at, se.id
         FROM workflow_step_executions se
         WHERE se.project_id = ${p} AND se.status = 'WAITING' AND se.due_at <= ${horizon}
         ORDER BY se.due_at, se.id LIMIT ${opts.limit})
      ) u
      ORDER BY due_at, kind, id LIMIT ${opts.limit}
    )
    SELECT d.kind, d.due_at, d.id,
           c.id AS campaign_id, c.name AS campaign_name, c.subject AS campaign_subject,
           w.id AS workflow_id, w.name AS workflow_name,
           s.id AS step_id, s.name AS step_name, s.type AS step_type,
           x.id AS execution_id, x.wait_event, ct.id AS contact_id, ct.email AS contact_email
    FROM due d
    LEFT JOIN campaigns c ON d.kind = 'campaign' AND c.project_id = ${p} AND c.id = d.id
    LEFT JOIN workflow_step_executions se ON d.kind = 'step' AND se.project_id = ${p} AND se.id = d.id
    LEFT JOIN workflow_steps s ON s.project_id = ${p} AND s.id = se.step_id
    LEFT JOIN workflows w ON w.project_id = ${p} AND w.id = se.workflow_id
    LEFT JOIN workflow_executions x ON x.project_id = ${p} AND x.id = se.execution_id
    LEFT JOIN contacts ct ON ct.project_id = ${p} AND ct.id = x.contact_id
    ORDER BY d.due_at, d.kind, d.id`.execute(db);
  return rows;
}
