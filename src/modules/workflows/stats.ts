import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { countWorkflowStepEmails, type StepEmailCounts } from '../emails/index.js';
import type { StepStats } from './workflows.schema.js';

type Db = Kysely<Database> | Transaction<Database>;

const ZERO_VISITS = { entered: 0, completed: 0, waiting: 0, failed: 0 };
const ZERO_EMAILS: StepEmailCounts = { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0 };

/**
 * Visits per step in ONE grouped aggregate over workflow_step_executions (index
 * workflow_step_executions_step_status_idx: an index-only scan grouped by (step_id, status)).
 * entered = every visit; waiting = PENDING, WAITING, RUNNING; completed = COMPLETED and SKIPPED
 * (a skipped step was passed over: the contact went on); failed = FAILED.
 */
export async function countStepVisits(db: Db, projectId: string, stepIds: readonly string[]): Promise<Map<string, typeof ZERO_VISITS>> {
  const out = new Map<string, typeof ZERO_VISITS>();
  if (stepIds.length === 0) return out;
  const { rows } = await sql<{ step_id: string; status: string; n: number }>`
    SELECT step_id, status, count(*)::int AS n FROM workflow_step_executions
    WHERE project_id = ${projectId}::uuid AND step_id = ANY(${stepIds}::uuid[])
    GROUP BY step_id, status`.execute(db);
  for (const r of rows) {
    const c = out.get(r.step_id) ?? { ...ZERO_VISITS };
    c.entered += r.n;
    if (r.status === 'COMPLETED' || r.status === 'SKIPPED') c.completed += r.n;
    else if (r.status === 'FAILED') c.failed += r.n;
    else c.waiting += r.n;
    out.set(r.step_id, c);
  }
  return out;
}

/** Per-step stats of a workflow's steps: two queries for the whole workflow, never one per step. */
export async function stepStats(db: Db, projectId: string, steps: readonly { id: string; type: string }[]): Promise<Map<string, StepStats>> {
  const sendIds = steps.filter((s) => s.type === 'SEND_EMAIL').map((s) => s.id);
  const [visits, emails] = await Promise.all([
    countStepVisits(
      db,
      projectId,
      steps.map((s) => s.id),
    ),
    // The emails module's grouped count over emails.workflow_step_id (index emails_workflow_step_status_idx).
    countWorkflowStepEmails(db, projectId, sendIds),
  ]);
  const out = new Map<string, StepStats>();
  for (const s of steps) {
    const v = visits.get(s.id) ?? ZERO_VISITS;
    out.set(s.id, s.type === 'SEND_EMAIL' ? { ...v, ...(emails.get(s.id) ?? ZERO_EMAILS) } : { ...v });
  }
  return out;
}
