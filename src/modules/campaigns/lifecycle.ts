import { type Kysely, sql } from 'kysely';
import type { BillingConfig } from '../../config.js';
import type { Database, TrackingMode } from '../../db/schema.js';
import { ApiError, ErrorCode, notFound, validationError } from '../../http/errors.js';
import { DATE_FORMS_HINT, parseDate } from '../../lib/dates.js';
import { isUuid } from '../../lib/uuid.js';
import { assertProjectCanSend } from '../accounts/index.js';
import { enforceEmailCap } from '../billing/index.js';
import { cancelPendingCampaignEmails, queueTestEmail, type TestEmailDeps } from '../emails/index.js';
import { countCampaignRecipients } from './audience.js';
import { findCampaignById, findContactByEmail } from './campaigns.repo.js';
import type { Campaign, SendCampaignAnswer, TestSendAnswer } from './campaigns.schema.js';
import { checkSender, findCampaignOr404, withCounts } from './campaigns.service.js';
import { enqueueCampaignStart, removeCampaignStart } from './fanout.js';
import { assertTransition, CampaignAction } from './state.js';

type Db = Kysely<Database>;

/**
 * `scheduledFor` as the spec takes it: omitted/null = now; otherwise a date the API's one date
 * parser takes (ISO 8601 with an offset, or the HTTP form toUTCString writes); anything else,
 * impossible dates (Feb 30) and years outside 1000-9999 included, is 400 (SPEC: unparseable).
 */
export function parseScheduledFor(value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  const date = parseDate(value, { httpDate: true });
  if (!date) throw new ApiError(400, ErrorCode.BAD_REQUEST, `scheduledFor is not a date: send ${DATE_FORMS_HINT}, or omit it to send now`);
  return date;
}

/**
 * POST /campaigns/:id/send, only from DRAFT (409 otherwise); the sender domain is checked
 * again (403). Immediate: DRAFT → SENDING with the campaign-send job (fan-out) in the same
 * transaction. Scheduled: DRAFT → SCHEDULED with the job at `scheduledFor` (a time in the
 * past is kept as given and the job runs at once, so the campaign starts within seconds).
 */
export async function sendCampaign(db: Db, projectId: string, id: string, scheduledFor: unknown, billing?: BillingConfig): Promise<SendCampaignAnswer> {
  const when = parseScheduledFor(scheduledFor);
  const current = await findCampaignOr404(db, projectId, id);
  assertTransition(current.status, CampaignAction.send);
  if (current.audience_type === 'SEGMENT' && !current.segment_id) {
    // Its segment was deleted while the campaign was a draft (segments.service clears the link).
    throw validationError([{ field: 'segmentId', message: 'The audience segment was deleted; choose another with PUT', code: 'invalid_type' }]);
  }
  await checkSender(db, projectId, current.from_email);
  await assertProjectCanSend(db, projectId);
  // Monthly caps (billing on): the audience as it is now must fit, else 402 and the campaign stays a DRAFT.
  await enforceEmailCap(db, billing, { projectId, category: 'campaign', count: () => countCampaignRecipients(db, current), dryRun: true });
  const row = await db.transaction().execute(async (trx) => {
    const locked = await findCampaignById(trx, projectId, id, { forUpdate: true });
    if (!locked) throw notFound('Campaign');
    assertTransition(locked.status, CampaignAction.send);
    const updated = await trx
      .updateTable('campaigns')
      .set({ status: when ? 'SCHEDULED' : 'SENDING', scheduled_for: when, updated_at: sql`now()`, ...(!when && { started_at: sql<Date>`now()` }) })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await enqueueCampaignStart(trx, id, when ?? undefined);
    return updated;
  });
  const scheduled = row.scheduled_for?.toISOString() ?? null;
  return {
    success: true,
    data: { id: row.id, name: row.name, status: row.status, scheduledFor: scheduled },
    message: scheduled ? `Campaign scheduled for ${scheduled}` : 'Campaign is being sent',
  };
}

/** The reason a caller's cancel records (the service's own reasons: start-failure.ts). */
const USER_CANCEL = { status_reason: 'CANCELLED_BY_USER', status_message: 'Cancelled with POST /campaigns/:id/cancel' } as const;

/**
 * SCHEDULED or SENDING → CANCELLED (409 otherwise), reason CANCELLED_BY_USER. In one transaction: the state, the
 * emails not handed to the relay yet (PENDING → CANCELLED, one statement; delivery skips
 * them) and the scheduled start job (removed; a start already running finds CANCELLED).
 */
export async function cancelCampaign(db: Db, projectId: string, id: string): Promise<Campaign> {
  if (!isUuid(id)) throw notFound('Campaign');
  const row = await db.transaction().execute(async (trx) => {
    const locked = await findCampaignById(trx, projectId, id, { forUpdate: true });
    if (!locked) throw notFound('Campaign');
    assertTransition(locked.status, CampaignAction.cancel);
    const updated = await trx
      .updateTable('campaigns')
      .set({ status: 'CANCELLED', ...USER_CANCEL, cancelled_at: sql`now()`, updated_at: sql`now()` })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await cancelPendingCampaignEmails(trx, id);
    await removeCampaignStart(trx, id);
    return updated;
  });
  const [campaign] = await withCounts(db, [row]);
  if (!campaign) throw notFound('Campaign');
  return campaign;
}

export type TestSendDeps = TestEmailDeps;

/**
 * POST /campaigns/:id/test: one email to `to`, rendered now with the data of the project's
 * contact of that address (if any; no contact is created), source TEST, at transactional
 * priority. It carries no campaign_id: it neither counts in the stats nor takes the contact's
 * one campaign email. To a suppressed address it is CANCELLED with the reason (the message says it).
 */
export async function testSendCampaign(
  deps: TestSendDeps,
  input: { projectId: string; tracking: TrackingMode; id: string; to: string },
): Promise<TestSendAnswer> {
  const { db } = deps;
  const campaign = await findCampaignOr404(db, input.projectId, input.id);
  await checkSender(db, input.projectId, campaign.from_email);
  await assertProjectCanSend(db, input.projectId);
  const to = input.to.toLowerCase();
  const contact = await findContactByEmail(db, input.projectId, to);
  const { emailId, suppressed } = await queueTestEmail(deps, {
    projectId: input.projectId,
    to,
    contactId: contact?.id ?? null,
    data: contact?.data,
    message: {
      subject: campaign.subject,
      html: campaign.body,
      type: campaign.type,
      templateId: null,
      fromEmail: campaign.from_email,
      fromName: campaign.from_name,
      replyTo: campaign.reply_to,
    },
  });
  return { success: true, data: { emailId, email: to }, message: suppressed ?? `Test email queued for ${to}` };
}
