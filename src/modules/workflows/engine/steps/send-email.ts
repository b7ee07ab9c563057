import { sql } from 'kysely';
import { assertProjectCanSend } from '../../../accounts/index.js';
import { enforceEmailCap } from '../../../billing/index.js';
import { queueTemplateEmails } from '../../../emails/index.js';
import { SendEmailConfig } from '../../steps.schema.js';
import { emptyResults, type StepHandler } from '../types.js';

/**
 * SEND_EMAIL: the template rendered and queued by the emails facade in this transaction, the
 * whole batch at once (one template load, one suppression query, one INSERT, one enqueue), so
 * the email rows (unique per execution and step) and the steps' completion commit together; a
 * re-run finds the row ('duplicate', its id looked up) and completes without a second email.
 * Variables: the contact's data and `email` (and the subscription links), overridden by the
 * execution context's keys, plus `event` and `context`. Recipient CUSTOM: the address given,
 * with the contact's data; the contact's own subscription does not apply to it (suppressions do).
 */
export const sendEmail: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const first = rows[0];
  if (!first) return results;
  const config = SendEmailConfig.parse(first.config);
  // No verified owner: 403, the step's savepoint rolls back and its executions FAIL with the message.
  await assertProjectCanSend(ctx.trx, ctx.projectId);
  const custom = config.recipient?.type === 'CUSTOM' ? config.recipient.customEmail : undefined;
  const outcomes = await queueTemplateEmails(ctx.trx, {
    projectId: ctx.projectId,
    templateId: config.templateId,
    links: { tokens: ctx.deps.tokens, publicUrl: ctx.deps.config.publicUrl },
    items: rows.map((row) => ({
      contact: { id: row.contactId, email: custom ?? row.email, data: row.data, subscribed: custom !== undefined || row.subscribed },
      variables: { ...row.context, event: row.event, context: row.context },
      workflow: { executionId: row.executionId, stepId: row.stepId },
    })),
  });
  // Over a monthly cap: 402, the step's savepoint rolls back and its executions FAIL with the message.
  await enforceEmailCap(ctx.trx, ctx.deps.config.billing, { projectId: ctx.projectId, category: 'workflow', count: outcomes.filter((o) => o.outcome === 'queued').length });
  const duplicates = rows.filter((_, n) => outcomes[n]?.emailId === null);
  const existing = new Map<string, string>();
  if (duplicates.length > 0) {
    const { rows: found } = await sql<{ id: string; execution_id: string }>`
      SELECT id, workflow_execution_id AS execution_id FROM emails
      WHERE workflow_execution_id = ANY(${duplicates.map((r) => r.executionId)}::uuid[]) AND workflow_step_id = ${first.stepId}::uuid`.execute(ctx.trx);
    for (const f of found) existing.set(f.execution_id, f.id);
  }
  rows.forEach((row, n) => {
    const outcome = outcomes[n];
    if (!outcome) throw new Error('queueTemplateEmails: no result');
    const emailId = outcome.emailId ?? existing.get(row.executionId) ?? null;
    results.done.push({ row, branch: null, output: { emailId, outcome: outcome.outcome, ...(outcome.reason !== undefined && { reason: outcome.reason }) } });
  });
  return results;
};
