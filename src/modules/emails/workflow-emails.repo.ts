import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { NewEmail } from './emails.repo.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Inserts the email of one workflow step execution; undefined when that execution's step already
 * has one (the unique index `emails_workflow_step_key`: a step run twice sends once).
 */
export async function insertWorkflowEmail(
  trx: Transaction<Database>,
  e: NewEmail,
  workflow: { executionId: string; stepId: string },
): Promise<{ id: string } | undefined> {
  return trx
    .insertInto('emails')
    .values({
      id: e.id,
      project_id: e.projectId,
      contact_id: e.contactId,
      source: 'WORKFLOW',
      type: e.type,
      template_id: e.templateId,
      to_email: e.toEmail,
      to_name: e.toName,
      from_email: e.fromEmail,
      from_name: e.fromName,
      reply_to: e.replyTo,
      subject: e.subject,
      html: e.html,
      headers: JSON.stringify(e.headers),
      status: e.status,
      message_id: e.messageId,
      error: e.error,
      workflow_execution_id: workflow.executionId,
      workflow_step_id: workflow.stepId,
    })
    .onConflict((oc) => oc.columns(['workflow_execution_id', 'workflow_step_id']).where('workflow_execution_id', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst();
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
