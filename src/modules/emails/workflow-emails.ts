import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound } from '../../lib/errors.js';
import { JobPriority } from '../../jobs/queue.js';
import type { Tokens } from '../../lib/tokens.js';
import { messageIdFor } from '../../mail/address.js';
import { renderForRecipient } from '../../mail/personalise.js';
import { isSuppressed } from '../suppressions/index.js';
import { findTemplate } from '../templates/index.js';
import { allocateEmailIds, enqueueEmails, type NewEmail } from './emails.repo.js';
import { blockedReason } from './rules.js';
import { insertWorkflowEmail } from './workflow-emails.repo.js';

/** Why a workflow email built from a template without subject or body is not sent. */
export const TEMPLATE_EMPTY = 'Not sent: the template has no subject or no body';

export interface WorkflowEmailInput {
  projectId: string;
  templateId: string;
  /** The execution's contact as the step read it. */
  contact: { id: string; email: string; data: Record<string, unknown> | null; subscribed: boolean };
  /** The step's values (e.g. `event`, `context`): they win over the contact's data; `{{event.orderId}}` reaches into them. */
  variables: Record<string, unknown>;
  workflow: { executionId: string; stepId: string };
  /** What the subscription links (`{{unsubscribeUrl}}`…) are signed with: AppDeps' tokens and config.publicUrl. */
  links: { tokens: Tokens; publicUrl: string };
}

export interface WorkflowEmailResult {
  /** The email row's id; null when the step already had its email ('duplicate'). */
  emailId: string | null;
  outcome: 'queued' | 'duplicate' | 'cancelled';
  /** Why a 'cancelled' email is not sent (also its row's `error`). */
  reason?: string;
}

/**
 * A workflow SEND_EMAIL step's email, all in the caller's transaction: the template (subject,
 * body, sender, type) rendered for the contact by the one rendering entry point, the rules of
 * every sender (a suppressed address, or MARKETING mail to an unsubscribed contact: the row is
 * CANCELLED with the reason and gets no job), the row (source WORKFLOW, keyed by execution and
 * step: a second call for the same step is a 'duplicate' and writes nothing) and its send-email
 * job at `JobPriority.workflow`. An unknown template is a 404 ApiError (nothing written). The
 * sender's domain is checked at delivery (an unverified one fails the email with the reason).
 */
export async function queueTemplateEmail(trx: Transaction<Database>, input: WorkflowEmailInput): Promise<WorkflowEmailResult> {
  const { projectId, contact } = input;
  const template = await findTemplate(trx, projectId, input.templateId);
  if (!template) throw notFound('Template');
  const [id = ''] = await allocateEmailIds(trx, 1);
  const suppressed = await isSuppressed(trx, projectId, contact.email);
  const content = renderForRecipient(
    { subject: template.subject, html: template.body },
    { emailId: id, projectId, contactId: contact.id, email: contact.email, data: contact.data, values: input.variables },
    input.links,
  );
  const blocked =
    blockedReason(suppressed, template.type, contact.subscribed) ?? (template.subject === '' || template.body === '' ? TEMPLATE_EMPTY : null);
  const email: NewEmail = {
    id,
    projectId,
    contactId: contact.id,
    source: 'WORKFLOW',
    type: template.type,
    templateId: template.id,
    toEmail: contact.email,
    toName: null,
    fromEmail: template.from_email,
    fromName: template.from_name,
    replyTo: template.reply_to,
    ...content,
    headers: {},
    attachmentSetId: null,
    messageId: messageIdFor(id, template.from_email),
    status: blocked === null ? 'PENDING' : 'CANCELLED',
    error: blocked,
  };
  const inserted = await insertWorkflowEmail(trx, email, input.workflow);
  if (!inserted) return { emailId: null, outcome: 'duplicate' };
  if (blocked !== null) return { emailId: id, outcome: 'cancelled', reason: blocked };
  await enqueueEmails(trx, [id], { priority: JobPriority.workflow });
  return { emailId: id, outcome: 'queued' };
}
