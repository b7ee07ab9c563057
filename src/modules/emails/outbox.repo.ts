import { type Kysely, sql, type Transaction } from 'kysely';
import { type Database, INSTANCE_PROJECT_ID } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import { recordMilestone } from './status.js';

/**
 * The capture outbox: with no SMTP_URL, finished messages (signed, exactly as they would go
 * on the wire) are stored in `outbox` instead of being sent. `outbox.email_id` is unique, so
 * capture is exactly-once: a second capture of an email is a no-op.
 */

export interface CapturedMessage {
  /** Null for SYSTEM emails. */
  projectId: string | null;
  emailId: string;
  messageId: string;
  envelopeFrom: string;
  envelopeTo: string;
  /** The subject as sent (campaign emails: rendered for the recipient). */
  subject: string;
  /** The subject was rendered at delivery (a campaign email): stored on the row too. */
  personalised?: boolean;
  raw: Buffer;
}

/** Stores the message in the caller's transaction; false when the email was already captured. */
async function captureMessage(trx: Transaction<Database>, m: CapturedMessage): Promise<boolean> {
  const row = await trx
    .insertInto('outbox')
    .values({
      project_id: m.projectId ?? INSTANCE_PROJECT_ID,
      email_id: m.emailId,
      message_id: m.messageId,
      envelope_from: m.envelopeFrom,
      envelope_to: m.envelopeTo,
      subject: m.subject,
      raw: m.raw,
    })
    .onConflict((oc) => oc.columns(['email_id', 'project_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export interface OutboxEntry {
  emailId: string;
  /** Null for the instance's own account mail (SYSTEM emails). */
  projectId: string | null;
  capturedAt: Date;
  to: string;
  subject: string;
  messageId: string;
}

/** Captured messages, newest first; `projectId` narrows to one project, `system` to the instance's own account mail. */
export async function listOutbox(db: Kysely<Database>, opts: { projectId?: string; system?: boolean; limit: number }): Promise<OutboxEntry[]> {
  let query = db
    .selectFrom('outbox as o')
    .innerJoin('emails as e', (j) => j.onRef('e.id', '=', 'o.email_id').onRef('e.project_id', '=', 'o.project_id'))
    .select(['o.email_id', 'o.project_id', 'o.created_at', 'o.envelope_to', 'o.message_id'])
    .select(sql<string>`coalesce(o.subject, e.subject)`.as('subject'))
    .orderBy('o.created_at', 'desc')
    .orderBy('o.id', 'desc')
    .limit(opts.limit);
  if (opts.projectId !== undefined) query = query.where('o.project_id', '=', opts.projectId);
  if (opts.system) query = query.where('o.project_id', '=', INSTANCE_PROJECT_ID);
  const rows = await query.execute();
  return rows.map((r) => ({
    emailId: r.email_id,
    projectId: r.project_id === INSTANCE_PROJECT_ID ? null : r.project_id,
    capturedAt: r.created_at,
    to: r.envelope_to,
    subject: r.subject,
    messageId: r.message_id,
  }));
}

/** The raw message captured for an email; undefined when there is none (or a malformed id). */
export async function findCapturedMessage(db: Kysely<Database>, emailId: string): Promise<Buffer | undefined> {
  if (!isUuid(emailId)) return undefined;
  const row = await db.selectFrom('outbox').select('raw').where('email_id', '=', emailId).executeTakeFirst();
  return row?.raw;
}


/**
 * Capture mode: the message stored in the outbox and the email marked SENT in one
 * transaction. 'captured', 'already' (the outbox had it: exactly once) or 'skipped' (not
 * PENDING/SENDING any more).
 */
export async function captureAndMarkSent(db: Kysely<Database>, message: CapturedMessage): Promise<'captured' | 'already' | 'skipped'> {
  return db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom('emails').select('status').where('id', '=', message.emailId).forUpdate().executeTakeFirst();
    if (!row || (row.status !== 'PENDING' && row.status !== 'SENDING')) return 'skipped';
    const captured = await captureMessage(trx, message);
    await trx
      .updateTable('emails')
      .set({ attempts: sql`attempts + 1`, error: null, ...(message.personalised && { subject: message.subject }) })
      .where('id', '=', message.emailId)
      .execute();
    await recordMilestone(trx, { emailId: message.emailId, status: 'SENT', data: { messageId: message.messageId } });
    return captured ? 'captured' : 'already';
  });
}
