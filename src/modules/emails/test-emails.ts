import type { Kysely } from 'kysely';
import type { BillingConfig } from '../../config.js';
import type { Database, EmailType } from '../../db/schema.js';
import { JobPriority } from '../../jobs/queue.js';
import type { Tokens } from '../../lib/tokens.js';
import { messageIdFor } from '../../mail/address.js';
import { renderForRecipient } from '../../mail/personalise.js';
import { enforceEmailCap } from '../billing/index.js';
import { isSuppressed } from '../suppressions/index.js';
import { allocateEmailIds, enqueueEmails, insertEmails } from './emails.repo.js';

export interface TestEmailDeps {
  db: Kysely<Database>;
  tokens: Tokens;
  publicUrl: string;
  /** Monthly caps (billing on): a test send counts as transactional. */
  billing?: BillingConfig;
}

export interface TestEmailInput {
  projectId: string;
  /** The address, normalised. */
  to: string;
  /** The project's contact of that address, if any: the row and its subscription links are its. */
  contactId: string | null;
  /** The data the variables are rendered with. */
  data: Record<string, unknown> | null | undefined;
  /** What is sent: a campaign's or a template's content and sender. */
  message: {
    subject: string;
    html: string;
    type: EmailType;
    templateId: string | null;
    fromEmail: string;
    fromName: string | null;
    replyTo: string | null;
  };
}

/**
 * One test email (POST /campaigns/:id/test, POST /templates/:id/test): rendered now, source TEST
 * (no campaign_id: it counts in no stats), queued at transactional priority. To a suppressed
 * address the row is CANCELLED with the reason, which is answered as `suppressed`. The sender and
 * the project's right to send are the caller's checks, made before.
 */
export async function queueTestEmail(deps: TestEmailDeps, input: TestEmailInput): Promise<{ emailId: string; suppressed: string | undefined }> {
  const { projectId, to, contactId, message } = input;
  return deps.db.transaction().execute(async (trx) => {
    const [id = ''] = await allocateEmailIds(trx, 1);
    const suppressed = await isSuppressed(trx, projectId, to);
    const content = renderForRecipient({ subject: message.subject, html: message.html }, { emailId: id, projectId, contactId, email: to, data: input.data }, deps);
    await insertEmails(trx, [
      {
        id,
        projectId,
        contactId,
        source: 'TEST',
        type: message.type,
        templateId: message.templateId,
        toEmail: to,
        toName: null,
        fromEmail: message.fromEmail,
        fromName: message.fromName,
        replyTo: message.replyTo,
        ...content,
        headers: {},
        attachmentSetId: null,
        messageId: messageIdFor(id, message.fromEmail),
        status: suppressed === undefined ? 'PENDING' : 'CANCELLED',
        error: suppressed ?? null,
      },
    ]);
    if (suppressed === undefined) {
      await enforceEmailCap(trx, deps.billing, { projectId, category: 'transactional', count: 1 });
      await enqueueEmails(trx, [id], { priority: JobPriority.transactional });
    }
    return { emailId: id, suppressed };
  });
}
