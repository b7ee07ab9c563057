import { sql } from 'kysely';
import { queueTemplateEmail } from '../../../emails/index.js';
import { SendEmailConfig } from '../../steps.schema.js';
import { emptyResults, type StepHandler } from '../types.js';

/**
 * SEND_EMAIL: the template rendered and queued by the emails facade in this transaction, so the
 * email row (unique per execution and step) and the step's completion commit together; a re-run
 * finds the row ('duplicate') and completes without a second email. Variables: the contact's
 * data and `email` (and the subscription links), overridden by the execution context's keys, plus
 * `event` and `context`. Recipient CUSTOM: the address given, with the contact's data; the
 * contact's own subscription does not apply to it (suppressions do).
 */
export const sendEmail: StepHandler = async (ctx, rows) => {
  const results = emptyResults();
  const first = rows[0];
  if (!first) return results;
  const config = SendEmailConfig.parse(first.config);
  const custom = config.recipient?.type === 'CUSTOM' ? config.recipient.customEmail : undefined;
  for (const row of rows) {
    const outcome = await queueTemplateEmail(ctx.trx, {
      projectId: ctx.projectId,
      templateId: config.templateId,
      contact: { id: row.contactId, email: custom ?? row.email, data: row.data, subscribed: custom !== undefined || row.subscribed },
      variables: { ...row.context, event: row.event, context: row.context },
      workflow: { executionId: row.executionId, stepId: row.stepId },
      links: { tokens: ctx.deps.tokens, publicUrl: ctx.deps.config.publicUrl },
    });
    let emailId = outcome.emailId;
    if (emailId === null) {
      const { rows: found } = await sql<{ id: string }>`
        SELECT id FROM emails WHERE workflow_execution_id = ${row.executionId}::uuid AND workflow_step_id = ${row.stepId}::uuid`.execute(ctx.trx);
      emailId = found[0]?.id ?? null;
    }
    results.done.push({ row, branch: null, output: { emailId, outcome: outcome.outcome, ...(outcome.reason !== undefined && { reason: outcome.reason }) } });
  }
  return results;
};
