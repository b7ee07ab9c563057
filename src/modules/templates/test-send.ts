import { ErrorCode, notFound, validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { assertProjectCanSend } from '../accounts/index.js';
import { normalizeEmail } from '../contacts/index.js';
import { assertVerifiedSender } from '../domains/index.js';
import { queueTestEmail, type TestEmailDeps } from '../emails/index.js';
import { findTemplateById } from './templates.repo.js';
import type { TemplateTestAnswer } from './templates.schema.js';
import { findContactByEmailForTest, findContactByIdForTest } from './test-send.repo.js';

export type TemplateTestDeps = TestEmailDeps;

/**
 * POST /templates/:id/test: one email of the saved template to `email`, queued at transactional
 * priority with source TEST, as a campaign test send is (same checks, same rendering, same rows).
 *
 * Variables come from the contact `contactId` when given (404 Contact when it is not the
 * project's), otherwise from the project's contact with the address `email` if there is one,
 * otherwise from nothing (tags render their fallback or empty). The email row belongs to the
 * contact of the address `email` (its subscription links too), never to the "render as" contact:
 * that one receives nothing. No contact is created. A suppressed address gets the row CANCELLED
 * with the reason, and the answer's message says so.
 */
export async function testSendTemplate(
  deps: TemplateTestDeps,
  input: { projectId: string; id: string; to: string; contactId?: string | undefined },
): Promise<TemplateTestAnswer> {
  const { db } = deps;
  const { projectId } = input;
  const template = isUuid(input.id) ? await findTemplateById(db, projectId, input.id) : undefined;
  if (!template) throw notFound('Template');
  const renderAs = input.contactId === undefined ? undefined : await findContactByIdForTest(db, projectId, input.contactId);
  if (input.contactId !== undefined && !renderAs) throw notFound('Contact');
  // An empty subject or body could not be sent (/v1/send refuses them too): say which, before anything is written.
  if (template.subject.trim() === '' || template.body.trim() === '') {
    const field = template.subject.trim() === '' ? 'subject' : 'body';
    throw validationError([{ field, code: 'too_small', message: `The saved template has no ${field}: add one and save before sending a test` }]);
  }
  await assertVerifiedSender(db, { projectId, fromEmail: template.from_email, code: ErrorCode.INTERNAL_SERVER_ERROR });
  await assertProjectCanSend(db, projectId);

  const to = normalizeEmail(input.to);
  const recipient = await findContactByEmailForTest(db, projectId, to);
  const { emailId, suppressed } = await queueTestEmail(deps, {
    projectId,
    to,
    contactId: recipient?.id ?? null,
    data: (renderAs ?? recipient)?.data,
    message: {
      subject: template.subject,
      html: template.body,
      type: template.type,
      templateId: template.id,
      fromEmail: template.from_email,
      fromName: template.from_name,
      replyTo: template.reply_to,
    },
  });
  const as = renderAs && renderAs.email !== to ? ` with the data of ${renderAs.email}` : '';
  return { success: true, data: { emailId, email: to, status: suppressed === undefined ? 'PENDING' : 'CANCELLED' }, message: suppressed ?? `Test email queued for ${to}${as}` };
}
