import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { isUuid } from '../../lib/uuid.js';
import type { AttachmentInfo } from './parse/received.js';

/** One received message for one project (migration 0033), before its event exists. */
export interface InboundMessageRow {
  projectId: string;
  messageKey: string;
  contactId: string;
  mailFrom: string;
  rcptTo: string[];
  from: string;
  to: string[];
  cc: string[];
  subject: string;
  messageId: string | null;
  inReplyTo: string | null;
  campaignId: string | null;
  emailId: string | null;
  text: string;
  textTruncated: boolean;
  html: string | null;
  htmlTruncated: boolean;
  attachments: AttachmentInfo[];
  size: number;
}

/**
 * Stores a received message; undefined when the project already has it (same Message-ID, else
 * the same bytes: a message delivered twice is recorded once).
 */
export async function insertInboundMessage(trx: Transaction<Database>, r: InboundMessageRow): Promise<string | undefined> {
  const { rows } = await sql<{ id: string }>`
    INSERT INTO inbound_messages (project_id, message_key, contact_id, mail_from, rcpt_to, from_address, to_addresses, cc_addresses, subject,
      message_id, in_reply_to, campaign_id, email_id, text_body, text_truncated, html_body, html_truncated, attachments, size)
    VALUES (${r.projectId}::uuid, ${r.messageKey}, ${r.contactId}::uuid, ${r.mailFrom.slice(0, 320)}, ${r.rcptTo}::text[], ${r.from}, ${r.to}::text[],
      ${r.cc}::text[], ${r.subject}, ${r.messageId}, ${r.inReplyTo}, ${r.campaignId}::uuid, ${r.emailId}::uuid, ${r.text}, ${r.textTruncated},
      ${r.html}, ${r.htmlTruncated}, ${JSON.stringify(r.attachments)}::jsonb, ${r.size})
    ON CONFLICT (project_id, message_key) DO NOTHING
    RETURNING id`.execute(trx);
  return rows[0]?.id;
}

export async function setInboundMessageEvent(trx: Transaction<Database>, id: string, eventId: string): Promise<void> {
  await sql`UPDATE inbound_messages SET event_id = ${eventId}::uuid WHERE id = ${id}::uuid`.execute(trx);
}

/**
 * The project's email a reply answers: the newest of ours whose Message-ID is among `ids`
 * (In-Reply-To, References). Reads `emails` by its unique Message-ID index; scoped to the project,
 * so a Message-ID of another project's email links nothing.
 */
export async function findRepliedEmail(trx: Transaction<Database>, projectId: string, ids: readonly string[]): Promise<{ id: string; campaignId: string | null } | undefined> {
  if (ids.length === 0) return undefined;
  const row = await trx
    .selectFrom('emails')
    .select(['id', 'campaign_id'])
    .where('message_id', 'in', ids)
    .where('project_id', '=', projectId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? { id: row.id, campaignId: row.campaign_id } : undefined;
}

/** A stored message of the project as GET /inbound-messages/:id answers it; undefined when the project has none with this id. */
export async function findInboundMessage(db: Kysely<Database>, projectId: string, id: string) {
  if (!isUuid(id)) return undefined;
  const { rows } = await sql<{
    id: string; received_at: Date; contact_id: string; event_id: string | null; mail_from: string; rcpt_to: string[]; from_address: string;
    to_addresses: string[]; cc_addresses: string[]; subject: string; message_id: string | null; in_reply_to: string | null; campaign_id: string | null;
    email_id: string | null; text_body: string; text_truncated: boolean; html_body: string | null; html_truncated: boolean; attachments: AttachmentInfo[]; size: number;
  }>`SELECT * FROM inbound_messages WHERE id = ${id}::uuid AND project_id = ${projectId}::uuid`.execute(db);
  const r = rows[0];
  if (!r) return undefined;
  return {
    id: r.id,
    receivedAt: r.received_at.toISOString(),
    contactId: r.contact_id,
    eventId: r.event_id,
    mailFrom: r.mail_from,
    recipients: r.rcpt_to,
    from: r.from_address,
    to: r.to_addresses,
    cc: r.cc_addresses,
    subject: r.subject,
    messageId: r.message_id,
    inReplyTo: r.in_reply_to,
    campaignId: r.campaign_id,
    emailId: r.email_id,
    text: r.text_body,
    textTruncated: r.text_truncated,
    html: r.html_body,
    htmlTruncated: r.html_truncated,
    attachments: r.attachments,
    size: r.size,
  };
}

/** Bytes of the project's stored attachments (an index-only sum of inbound_attachments_stored_idx). */
export async function attachmentBytesOf(db: Kysely<Database>, projectId: string): Promise<number> {
  const { rows } = await sql<{ bytes: string }>`
    SELECT coalesce(sum(size), 0)::bigint AS bytes FROM inbound_attachments WHERE project_id = ${projectId}::uuid AND stored`.execute(db);
  return Number(rows[0]?.bytes ?? 0);
}

/** The attachments of a message just inserted (one statement). */
export async function insertAttachments(
  trx: Transaction<Database>,
  projectId: string,
  inboundMessageId: string,
  records: readonly { index: number; filename: string | null; contentType: string; size: number; stored: boolean; reason: string | null; key: string | null; sha256: string | null }[],
): Promise<void> {
  if (records.length === 0) return;
  await sql`
    INSERT INTO inbound_attachments (project_id, inbound_message_id, index, filename, content_type, size, stored, reason, storage_key, sha256)
    SELECT ${projectId}::uuid, ${inboundMessageId}::uuid, x.index, x.filename, x.content_type, x.size, x.stored, x.reason, x.storage_key, x.sha256
    FROM unnest(${records.map((r) => r.index)}::int[], ${records.map((r) => r.filename)}::text[], ${records.map((r) => r.contentType)}::text[],
      ${records.map((r) => r.size)}::bigint[], ${records.map((r) => r.stored)}::boolean[], ${records.map((r) => r.reason)}::text[],
      ${records.map((r) => r.key)}::text[], ${records.map((r) => r.sha256)}::text[])
      AS x(index, filename, content_type, size, stored, reason, storage_key, sha256)`.execute(trx);
}

/** A message's attachment rows (the primary key's range), by index. */
export async function listAttachments(db: Kysely<Database>, projectId: string, inboundMessageId: string) {
  const { rows } = await sql<{ index: number; stored: boolean; reason: string | null }>`
    SELECT index, stored, reason FROM inbound_attachments
    WHERE project_id = ${projectId}::uuid AND inbound_message_id = ${inboundMessageId}::uuid ORDER BY index`.execute(db);
  return rows;
}

/** One stored attachment of the project's message; undefined when there is none (or it was not stored). */
export async function findStoredAttachment(db: Kysely<Database>, projectId: string, inboundMessageId: string, index: number) {
  if (!isUuid(inboundMessageId) || !Number.isSafeInteger(index) || index < 0 || index > 2_147_483_647) return undefined;
  const { rows } = await sql<{ filename: string | null; content_type: string; size: string; storage_key: string; sha256: string }>`
    SELECT filename, content_type, size, storage_key, sha256 FROM inbound_attachments
    WHERE project_id = ${projectId}::uuid AND inbound_message_id = ${inboundMessageId}::uuid AND index = ${index} AND stored`.execute(db);
  const r = rows[0];
  return r ? { filename: r.filename, contentType: r.content_type, size: Number(r.size), key: r.storage_key, sha256: r.sha256 } : undefined;
}

/** The storage keys of the project's stored attachments (a project reset or deletion queues their removal). */
export async function attachmentKeysOf(trx: Transaction<Database>, projectId: string): Promise<string[]> {
  const { rows } = await sql<{ storage_key: string }>`
    SELECT storage_key FROM inbound_attachments WHERE project_id = ${projectId}::uuid AND stored`.execute(trx);
  return rows.map((r) => r.storage_key);
}
