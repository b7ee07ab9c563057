import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { NewEmail } from './emails.repo.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Inserts the emails of workflow step executions in ONE statement (arrays unnested; what the
 * rows are of `projectId`). Answers the ids written: an email whose execution's
 * step already has one, or repeats an earlier entry's (execution, step), is left out (the unique
 * index `emails_workflow_step_key`: a step run twice sends once).
 */
export async function insertWorkflowEmails(
  trx: Transaction<Database>,
  projectId: string,
  entries: readonly { email: NewEmail; workflow: { executionId: string; stepId: string } }[],
): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const col = <V>(f: (e: NewEmail) => V) => entries.map((x) => f(x.email));
  const { rows } = await sql<{ id: string }>`
    INSERT INTO emails (id, project_id, contact_id, source, type, template_id, to_email, to_name, from_email, from_name, reply_to,
                        subject, html, headers, status, message_id, error, workflow_execution_id, workflow_step_id)
    SELECT e.id, ${projectId}::uuid, e.contact_id, 'WORKFLOW', e.type, e.template_id, e.to_email, e.to_name, e.from_email,
           e.from_name, e.reply_to, e.subject, e.html, e.headers, e.status, e.message_id, e.error, e.execution_id, e.step_id
    FROM unnest(${col((e) => e.id)}::uuid[], ${col((e) => e.contactId)}::uuid[], ${col((e) => e.type)}::text[],
                ${col((e) => e.templateId)}::uuid[], ${col((e) => e.toEmail)}::text[], ${col((e) => e.toName)}::text[],
                ${col((e) => e.fromEmail)}::text[], ${col((e) => e.fromName)}::text[], ${col((e) => e.replyTo)}::text[],
                ${col((e) => e.subject)}::text[], ${col((e) => e.html)}::text[], ${col((e) => JSON.stringify(e.headers))}::jsonb[],
                ${col((e) => e.status)}::text[], ${col((e) => e.messageId)}::text[], ${col((e) => e.error)}::text[],
                ${entries.map((x) => x.workflow.executionId)}::uuid[], ${entries.map((x) => x.workflow.stepId)}::uuid[])
      WITH ORDINALITY AS e(id, contact_id, type, template_id, to_email, to_name, from_email, from_name, reply_to, subject, html,
                           headers, status, message_id, error, execution_id, step_id, n)
    ORDER BY e.n
    ON CONFLICT (workflow_execution_id, workflow_step_id, project_id) WHERE workflow_execution_id IS NOT NULL DO NOTHING
    RETURNING id`.execute(trx);
  return new Set(rows.map((r) => r.id));
}

/** Milestones of one workflow step's emails. */
export interface StepEmailCounts {
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
}

/**
 * Per-step email counts in ONE grouped query (index `emails_workflow_step_status_idx`). As the
 * campaign stats count: a milestone counts once reached (its timestamp is set), whatever
 * happened later, so a clicked email also counts as sent, delivered (when the relay reported
 * it) and opened. `sent` is every email handed to the relay, unconfirmed ones included. Steps
 * without emails are absent from the map.
 */
export async function countWorkflowStepEmails(db: Db, projectId: string, stepIds: readonly string[]): Promise<Map<string, StepEmailCounts>> {
  const counts = new Map<string, StepEmailCounts>();
  if (stepIds.length === 0) return counts;
  const { rows } = await sql<StepEmailCounts & { step_id: string }>`
    SELECT workflow_step_id AS step_id,
      count(sent_at)::int AS sent,
      count(delivered_at)::int AS delivered,
      count(opened_at)::int AS opened,
      count(clicked_at)::int AS clicked,
      count(bounced_at)::int AS bounced
    FROM emails
    WHERE workflow_step_id = ANY(${stepIds}::uuid[]) AND project_id = ${projectId}
    GROUP BY workflow_step_id`.execute(db);
  for (const { step_id: id, ...c } of rows) counts.set(id, c);
  return counts;
}
