import { type Kysely, sql, type Transaction } from 'kysely';
import { type Database, type EmailRow, type EmailSource, type EmailStatus, type EmailType, type StoredAttachment, SYSTEM_SOURCE, type TrackingMode } from '../../db/schema.js';
import { Tasks } from '../../jobs/queue.js';
import { suppressionNoteSql } from '../suppressions/index.js';
import { compiledStatement } from './compiled-statement.js';
import { STATUS_EVENT } from './status.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Attempts of a send-email job before it gives up on transient failures. graphile-worker
 * waits exp(n) seconds after the n-th failure: 3 s, 7 s, 20 s, 55 s, 2.5 min, 7 min, 18 min,
 * 50 min, 2.25 h: about 3.5 hours from the first attempt to the tenth.
 */
export const SEND_MAX_ATTEMPTS = 10;

/** `n` new time-ordered ids (uuid v7), chosen before the rows exist: Message-IDs and links carry them. */
export async function allocateEmailIds(trx: Transaction<Database>, n: number): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`SELECT uuid_generate_v7() AS id FROM generate_series(1, ${n}::int)`.execute(trx);
  return rows.map((r) => r.id);
}

/** Attachments of one request, stored once and shared by its emails. */
export async function insertAttachmentSet(trx: Transaction<Database>, projectId: string, items: readonly StoredAttachment[]): Promise<string> {
  const row = await trx
    .insertInto('attachment_sets')
    .values({ project_id: projectId, items: JSON.stringify(items) })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

/** What an email row holds of its message: envelope, headers and the rendered content. */
interface EmailMessage {
  id: string;
  projectId: string;
  contactId: string | null;
  source: EmailSource;
  type: EmailType;
  toEmail: string;
  toName: string | null;
  fromEmail: string;
  fromName: string | null;
  replyTo: string | null;
  subject: string;
  html: string;
  headers: Record<string, string>;
  attachmentSetId: string | null;
  messageId: string;
}

/** One email row to insert (already rendered). */
export interface NewEmail extends EmailMessage {
  templateId: string | null;
  campaignId?: string | null;
  /** PENDING (to deliver) or CANCELLED (never to deliver, with `error` saying why). */
  status: Extract<EmailStatus, 'PENDING' | 'CANCELLED'>;
  error: string | null;
}

/** Inserts every email of a request in one statement. */
export async function insertEmails(trx: Transaction<Database>, emails: readonly NewEmail[]): Promise<void> {
  if (emails.length === 0) return;
  await trx
    .insertInto('emails')
    .values(
      emails.map((e) => ({
        id: e.id,
        project_id: e.projectId,
        contact_id: e.contactId,
        source: e.source,
        type: e.type,
        campaign_id: e.campaignId ?? null,
        template_id: e.templateId,
        to_email: e.toEmail,
        to_name: e.toName,
        from_email: e.fromEmail,
        from_name: e.fromName,
        reply_to: e.replyTo,
        subject: e.subject,
        html: e.html,
        headers: JSON.stringify(e.headers),
        attachment_set_id: e.attachmentSetId,
        status: e.status,
        message_id: e.messageId,
        error: e.error,
      })),
    )
    .execute();
}

/** Options of {@link enqueueEmails}. */
export interface EnqueueOptions {
  /** JobPriority: transactional (0) for /v1/send, workflow (10), campaign (30). */
  priority: number;
  /** Not before this time. Default: now. */
  runAt?: Date;
  /** Default {@link SEND_MAX_ATTEMPTS}. */
  maxAttempts?: number;
}

/**
 * One send-email job per email id (test sends, workflows, recovered campaign mail; /v1/send and
 * campaigns queue batch jobs instead), keyed by the id (enqueuing an email twice cannot deliver
 * it twice), all in one statement, in the caller's transaction so the jobs exist exactly when
 * the rows do.
 */
export async function enqueueEmails(trx: Transaction<Database>, emailIds: readonly string[], opts: EnqueueOptions): Promise<void> {
  if (emailIds.length === 0) return;
  await sql`
    SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
      SELECT ROW(${Tasks.sendEmail}::text, json_build_object('emailId', t.id), NULL::text, ${opts.runAt ?? null}::timestamptz,
                 ${opts.maxAttempts ?? SEND_MAX_ATTEMPTS}::int, t.id::text, ${opts.priority}::int, NULL::text[])::graphile_worker.job_spec
      FROM unnest(${emailIds}::uuid[]) AS t(id)
    ))`.execute(trx);
}

/** An email as delivery needs it, with its project's settings (a SYSTEM email: no project, no tracking). */
export interface DeliveryEmail extends Omit<EmailMessage, 'projectId' | 'source'> {
  /** Null for SYSTEM emails (the instance's own account mail). */
  projectId: string | null;
  source: EmailSource | typeof SYSTEM_SOURCE;
  /** SYSTEM emails: their own text part (others derive it from the HTML). */
  text: string | null;
  status: EmailStatus;
  attempts: number;
  /** Set when the last attempt reached its final dot (docs/sending.md "Exactly once"). */
  endOfDataAt: Date | null;
  /** The reason of an earlier failed attempt, if any. */
  error: string | null;
  tracking: TrackingMode;
  projectDisabled: boolean;
  /** Set when the recipient's address is on the project's suppression list: the note to cancel with. */
  suppressed: string | null;
  /** The project's own sending rate (emails per second, migration 0024); null = the instance default. */
  sendingRate: number | null;
  /** When the email was accepted (its row created): delivery latency is measured from it. */
  createdAt: Date;
  /**
   * Campaign emails only: the recipient contact as it is now (read in the same query), for
   * rendering at delivery. `id` null: the contact was deleted since the fan-out.
   */
  recipient?: CampaignRecipient;
}

export interface CampaignRecipient {
  id: string | null;
  email: string | null;
  data: Record<string, unknown> | null;
  subscribed: boolean | null;
}

/**
 * The delivery read of the emails of `emailIds`: each email found by its key, then its project,
 * its recipient (campaign emails) and its suppression entry each probed by key for that email
 * (LATERAL subqueries with LIMIT 1, which PostgreSQL does not flatten into joins). The plan cannot
 * depend on statistics: `id` alone is not unique to the planner since the key is (id, project_id)
 * (migration 0039), and on a table without statistics yet (the first campaign of a new
 * installation) it guessed thousands of rows per read and chose a parallel plan (~10 ms to start
 * each time), or a merge join walking a whole index of emails in project order, or hash joins
 * scanning every contact (bench/README "Distribution-ready keys"). The LIMIT is never reached.
 */
const deliveryRead = (db: Db, emailIds: readonly string[]) =>
  db
    .selectFrom(db.selectFrom('emails').selectAll().where('id', '=', sql<string>`any(${emailIds}::uuid[])`).limit(sql.lit(MAX_DELIVERY_READ)).as('e'))
    // SYSTEM emails have no project: INSTANCE_PROJECT_ID's row is ignored (toDeliveryEmail).
    .leftJoinLateral(
      (eb) => eb.selectFrom('projects').select(['sending_rate', 'tracking', 'disabled']).whereRef('projects.id', '=', 'e.project_id').limit(1).as('p'),
      (j) => j.onTrue(),
    )
    // Only campaign emails are personalised at delivery: for other emails the key is NULL, so the
    // contacts index is not even probed.
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('contacts')
          .select(['id', 'email', 'data', 'subscribed'])
          .where('contacts.id', '=', sql<string>`CASE WHEN e.source = 'CAMPAIGN' THEN e.contact_id END`)
          .whereRef('contacts.project_id', '=', 'e.project_id')
          .limit(1)
          .as('c'),
      (j) => j.onTrue(),
    )
    // The suppression list, probed by its key in this same query (no extra round trip per email).
    .leftJoinLateral(
      (eb) =>
        eb
          .selectFrom('suppressions')
          .select(['email', 'reason', 'created_at'])
          .whereRef('suppressions.project_id', '=', 'e.project_id')
          .where('suppressions.email', '=', sql<string>`lower(e.to_email)`)
          .limit(1)
          .as('s'),
      (j) => j.onTrue(),
    )
    .select(suppressionNoteSql('s').as('suppressed'))
    .select('p.sending_rate')
    .select([
      'e.id', 'e.project_id', 'e.contact_id', 'e.source', 'e.type', 'e.status', 'e.to_email', 'e.to_name', 'e.from_email', 'e.from_name',
      'e.reply_to', 'e.subject', 'e.html', 'e.text', 'e.headers', 'e.attachment_set_id', 'e.message_id', 'e.attempts', 'e.end_of_data_at', 'e.error', 'e.created_at',
      sql<TrackingMode>`coalesce(p.tracking, 'DISABLED')`.as('tracking'), sql<boolean>`coalesce(p.disabled, false)`.as('disabled'),
      'c.id as recipient_id', 'c.email as recipient_email', 'c.data as recipient_data', 'c.subscribed as recipient_subscribed',
    ]);

type DeliveryRow = Awaited<ReturnType<ReturnType<typeof deliveryRead>['execute']>>[number];

/**
 * The emails of `emailIds` as delivery needs them, each with its project's state, its suppression
 * note and (campaign emails) its recipient as it is now, in one query for all of them (a batch of
 * deliveries: delivery/batches.ts). Unknown ids are absent from the map.
 */
export async function findEmailsForDelivery(db: Db, emailIds: readonly string[]): Promise<Map<string, DeliveryEmail>> {
  if (emailIds.length > MAX_DELIVERY_READ) throw new Error(`findEmailsForDelivery: at most ${MAX_DELIVERY_READ} ids`);
  const { rows } = await db.executeQuery(deliveryReadById(db, emailIds));
  return new Map(rows.map((r) => [r.id, toDeliveryEmail(r)]));
}

/** The most emails one delivery read takes (delivery/batches.ts makes batches of at most this). */
export const MAX_DELIVERY_READ = 200;

// Compiled once (compiled-statement.ts): it runs at every batch of deliveries.
const deliveryReadById = compiledStatement((db, emailIds: readonly string[]) => deliveryRead(db, emailIds).compile(), 1);

function toDeliveryEmail(r: DeliveryRow): DeliveryEmail {
  const recipient: CampaignRecipient | undefined =
    r.source === 'CAMPAIGN' ? { id: r.recipient_id, email: r.recipient_email, data: r.recipient_data, subscribed: r.recipient_subscribed } : undefined;
  // SYSTEM emails: INSTANCE_PROJECT_ID's row is no project (never disabled, tracked or throttled).
  const system = r.source === SYSTEM_SOURCE;
  return {
    id: r.id,
    projectId: system ? null : r.project_id,
    contactId: r.contact_id,
    source: r.source,
    type: r.type,
    status: r.status,
    toEmail: r.to_email,
    toName: r.to_name,
    fromEmail: r.from_email,
    fromName: r.from_name,
    replyTo: r.reply_to,
    subject: r.subject,
    html: r.html,
    text: r.text,
    headers: r.headers,
    attachmentSetId: r.attachment_set_id,
    messageId: r.message_id,
    attempts: r.attempts,
    endOfDataAt: r.end_of_data_at,
    error: r.error,
    ...(system
      ? { tracking: 'DISABLED', projectDisabled: false, sendingRate: null }
      : { tracking: r.tracking, projectDisabled: r.disabled, sendingRate: r.sending_rate }),
    suppressed: r.suppressed,
    createdAt: r.created_at,
    ...(recipient && { recipient }),
  };
}

/** An email row of a project (never a SYSTEM email). */
export type ProjectEmailRow = Omit<EmailRow, 'project_id' | 'source'> & { project_id: string; source: EmailSource };

/** One email of the project (GET /emails/:id), or undefined. */
export async function findProjectEmail(db: Db, projectId: string, emailId: string): Promise<ProjectEmailRow | undefined> {
  const row = await db.selectFrom('emails').selectAll().where('id', '=', emailId).where('project_id', '=', projectId).executeTakeFirst();
  // Filtered by project: a SYSTEM email (INSTANCE_PROJECT_ID's) is never found here.
  if (!row || row.source === SYSTEM_SOURCE) return undefined;
  return { ...row, source: row.source };
}

export async function findAttachments(db: Db, attachmentSetId: string): Promise<StoredAttachment[]> {
  const row = await db.selectFrom('attachment_sets').select('items').where('id', '=', attachmentSetId).executeTakeFirst();
  return row?.items ?? [];
}

/**
 * PENDING → SENDING (attempts + 1, no end-of-data stage yet) for each of `emailIds`, committed in
 * one statement before the relay is contacted: an email found in SENDING later was interrupted
 * mid-transaction. Answers each email's attempt number (the fence of `markEndOfData`); absent
 * when it was not PENDING. Rows are locked in id order (the index scan of `= any`).
 */
export async function markSending(db: Kysely<Database>, emailIds: readonly string[]): Promise<Map<string, number>> {
  const { rows } = await db.executeQuery(markSendingStatement(db, emailIds));
  return new Map(rows.map((r) => [r.id, r.attempts]));
}

const markSendingStatement = compiledStatement(
  (db, emailIds: readonly string[]) =>
    db
      .updateTable('emails')
      .set({ status: 'SENDING', attempts: sql`attempts + 1`, end_of_data_at: null, updated_at: sql`now()` })
      .where('id', '=', sql<string>`any(${emailIds}::uuid[])`)
      .where('status', '=', 'PENDING')
      .returning(['id', 'attempts'])
      .compile(),
  1,
);

/** PENDING → CANCELLED with the reason (never delivered); false when it was not PENDING any more. */
export async function markCancelled(db: Kysely<Database>, emailId: string, error: string): Promise<boolean> {
  const row = await db
    .updateTable('emails')
    .set({ status: 'CANCELLED', error, updated_at: sql`now()` })
    .where('id', '=', emailId)
    .where('status', '=', 'PENDING')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** SENDING → PENDING after a caught transient failure, with the reason, before the job is retried. */
export async function releaseToPending(db: Kysely<Database>, emailId: string, error: string): Promise<void> {
  await db
    .updateTable('emails')
    .set({ status: 'PENDING', error, updated_at: sql`now()` })
    .where('id', '=', emailId)
    .where('status', '=', 'SENDING')
    .execute();
}

/** PENDING/SENDING (or only `from`) → FAILED with the reason (a 5xx reply, or retries exhausted). */
export async function markFailed(
  db: Kysely<Database>,
  emailId: string,
  error: string,
  from: readonly EmailStatus[] = ['PENDING', 'SENDING'],
): Promise<boolean> {
  const row = await db
    .updateTable('emails')
    .set({ status: 'FAILED', error, failed_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', emailId)
    .where('status', 'in', from)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** What `markSent` records on one email. */
export interface SentMark {
  emailId: string;
  messageId: string;
  /** Replaces `error` (null clears the reason of an earlier failed attempt); undefined leaves it. */
  note?: string | null;
  /** Recorded without the relay's 250 (docs/sending.md); a 250 clears the flag. */
  unconfirmed?: boolean;
  /** A campaign email's row holds the campaign's subject template until it is sent: then the subject the recipient got. */
  subject?: string;
}

/**
 * SENT + sent_at + the email.sent event for many emails in ONE statement: what `recordMilestone(trx,
 * {status: 'SENT'})` does for each (sent_at set once, status moved forward only, FAILED/CANCELLED
 * left alone, the event on the first occurrence; an unconfirmed mark only while the email is
 * PENDING or SENDING), on the hot path of delivery (bench/send.md). Answers the ids that were
 * recorded (not those FAILED/CANCELLED). One mark per email.
 */
export async function markSent(db: Kysely<Database>, marks: readonly SentMark[]): Promise<Set<string>> {
  if (marks.length === 0) return new Set();
  const { rows } = await db.executeQuery(
    markSentStatement(
      db,
      marks.map((m) => m.emailId),
      marks.map((m) => m.messageId),
      marks.map((m) => m.note !== undefined),
      marks.map((m) => m.note ?? null),
      marks.map((m) => m.unconfirmed ?? false),
      marks.map((m) => m.subject !== undefined),
      marks.map((m) => m.subject ?? null),
    ),
  );
  return new Set(rows.map((r) => r.id));
}

type Column<T> = readonly T[];

// Compiled once (compiled-statement.ts): it runs at every batch of deliveries.
const markSentStatement = compiledStatement(
  (
    db,
    ids: Column<string>,
    messageIds: Column<string>,
    setNote: Column<boolean>,
    notes: Column<string | null>,
    unconfirmed: Column<boolean>,
    setSubject: Column<boolean>,
    subjects: Column<string | null>,
  ) => sql<{ id: string }>`
    WITH input AS (
      SELECT * FROM unnest(${ids}::uuid[], ${messageIds}::text[],
                           ${setNote}::boolean[], ${notes}::text[],
                           ${unconfirmed}::boolean[],
                           ${setSubject}::boolean[], ${subjects}::text[])
        AS t(id, message_id, set_note, note, unconfirmed, set_subject, subject)
    ),
    before AS (
      SELECT e.id, e.sent_at IS NULL AS first, e.status IN ('PENDING', 'SENDING') AS open
      FROM emails e WHERE e.id IN (SELECT id FROM input) ORDER BY e.id FOR UPDATE
    ),
    updated AS (
      UPDATE emails e SET
        sent_at = coalesce(e.sent_at, now()),
        -- STATUS_RANK: only PENDING and SENDING rank below SENT.
        status = CASE WHEN e.status IN ('PENDING', 'SENDING') THEN 'SENT' ELSE e.status END,
        unconfirmed = CASE WHEN m.stale THEN e.unconfirmed ELSE i.unconfirmed END,
        updated_at = now(),
        -- A confirmed mark on an email another run marked unconfirmed meanwhile (the 250 was recorded
        -- after all) drops that run's note with its flag.
        error = CASE WHEN m.stale THEN e.error WHEN i.set_note THEN i.note
                     WHEN e.unconfirmed AND NOT i.unconfirmed THEN NULL ELSE e.error END,
        subject = CASE WHEN i.set_subject AND NOT m.stale THEN i.subject ELSE e.subject END
      FROM before b JOIN input i ON i.id = b.id
        -- An unconfirmed mark on an email no longer PENDING or SENDING is stale (a run that read it
        -- SENDING past its end of data while another run's SENT, or a relay's event, settled it):
        -- it leaves the flag, note and subject as they are.
        CROSS JOIN LATERAL (SELECT i.unconfirmed AND NOT b.open AS stale) m
      WHERE e.id = b.id AND e.status NOT IN ('FAILED', 'CANCELLED')
      RETURNING e.id, b.first, e.contact_id, e.project_id, i.message_id
    ),
    event AS (
      INSERT INTO events (project_id, contact_id, name, data)
      SELECT project_id, contact_id, ${STATUS_EVENT.SENT}, jsonb_build_object('emailId', id, 'messageId', message_id)
      FROM updated WHERE first AND contact_id IS NOT NULL
    )
    SELECT id FROM updated`.compile(db),
  7,
);
