import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound } from '../../lib/errors.js';
import { JobPriority } from '../../jobs/queue.js';
import type { Tokens } from '../../lib/tokens.js';
import { messageIdFor } from '../../mail/address.js';
import { renderForRecipient } from '../../mail/personalise.js';
import { normalizeEmail } from '../contacts/index.js';
import { findSuppressionNotes } from '../suppressions/index.js';
import { findTemplate } from '../templates/index.js';
import { allocateEmailIds, enqueueEmails, type NewEmail } from './emails.repo.js';
import { blockedReason } from './rules.js';
import { insertWorkflowEmails } from './workflow-emails.repo.js';

/** Why a workflow email built from a template without subject or body is not sent. */
export const TEMPLATE_EMPTY = 'Not sent: the template has no subject or no body';

/** One recipient of a SEND_EMAIL step: one execution's email. */
export interface WorkflowEmailItem {
  /** The execution's contact as the step read it. */
  contact: { id: string; email: string; data: Record<string, unknown> | null; subscribed: boolean };
  /** The step's values (e.g. `event`, `context`): they win over the contact's data; `{{event.orderId}}` reaches into them. */
  variables: Record<string, unknown>;
  workflow: { executionId: string; stepId: string };
}

/** The emails of one SEND_EMAIL step for a batch of its executions (one template). */
export interface WorkflowEmailsInput {
  projectId: string;
  templateId: string;
  /** What the subscription links (`{{unsubscribeUrl}}`…) are signed with: AppDeps' tokens and config.publicUrl. */
  links: { tokens: Tokens; publicUrl: string };
  items: readonly WorkflowEmailItem[];
}

/** One execution's email (the single-item form of {@link WorkflowEmailsInput}). */
export interface WorkflowEmailInput extends WorkflowEmailItem {
  projectId: string;
  templateId: string;
  links: WorkflowEmailsInput['links'];
}

export interface WorkflowEmailResult {
  /** The email row's id; null when the step already had its email ('duplicate'). */
  emailId: string | null;
  outcome: 'queued' | 'duplicate' | 'cancelled';
  /** Why a 'cancelled' email is not sent (also its row's `error`). */
  reason?: string;
}

/**
 * The emails of a workflow SEND_EMAIL step for a batch of executions, all in the caller's
 * transaction, set-based: the template (subject, body, sender, type) loaded once and rendered
 * per item by the one rendering entry point; the rules of every sender (a suppressed address,
 * or MARKETING mail to an unsubscribed contact: the row is CANCELLED with the reason and gets no
 * job), the suppression list read in one query; the rows in ONE statement (source WORKFLOW,
 * keyed by execution and step: an item whose step already has its email, or repeats an earlier
 * item of the batch, is a 'duplicate' and writes nothing); the send-email jobs of the rows to
 * deliver in one statement at `JobPriority.workflow`. Results are per item, in input order. An
 * unknown template is a 404 ApiError (nothing written). The sender's domain is checked at
 * delivery (an unverified one fails the email with the reason).
 */
export async function queueTemplateEmails(trx: Transaction<Database>, input: WorkflowEmailsInput): Promise<WorkflowEmailResult[]> {
  const { projectId, items } = input;
  if (items.length === 0) return [];
  const template = await findTemplate(trx, projectId, input.templateId);
  if (!template) throw notFound('Template');
  const ids = await allocateEmailIds(trx, items.length);
  const suppressed = await findSuppressionNotes(trx, projectId, items.map((i) => normalizeEmail(i.contact.email)));
  const empty = template.subject === '' || template.body === '';
  const emails = items.map((item, n): NewEmail => {
    const id = ids[n] ?? '';
    const { contact } = item;
    const content = renderForRecipient(
      { subject: template.subject, html: template.body },
      { emailId: id, projectId, contactId: contact.id, email: contact.email, data: contact.data, values: item.variables },
      input.links,
    );
    const blocked = blockedReason(suppressed.get(normalizeEmail(contact.email)), template.type, contact.subscribed) ?? (empty ? TEMPLATE_EMPTY : null);
    return {
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
  });
  const inserted = await insertWorkflowEmails(trx, projectId, emails.map((email, n) => ({ email, workflow: items[n]?.workflow ?? { executionId: '', stepId: '' } })));
  await enqueueEmails(trx, emails.filter((e) => e.status === 'PENDING' && inserted.has(e.id)).map((e) => e.id), { priority: JobPriority.workflow });
  return emails.map((e) => {
    if (!inserted.has(e.id)) return { emailId: null, outcome: 'duplicate' };
    if (e.error !== null) return { emailId: e.id, outcome: 'cancelled', reason: e.error };
    return { emailId: e.id, outcome: 'queued' };
  });
}

/** One execution's email: {@link queueTemplateEmails} with one item. */
export async function queueTemplateEmail(trx: Transaction<Database>, input: WorkflowEmailInput): Promise<WorkflowEmailResult> {
  const { projectId, templateId, links, ...item } = input;
  const [result] = await queueTemplateEmails(trx, { projectId, templateId, links, items: [item] });
  if (!result) throw new Error('queueTemplateEmails: no result');
  return result;
}
