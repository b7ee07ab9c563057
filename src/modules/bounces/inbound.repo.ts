import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

/** Bytes of a received message kept in inbound_feedback: the report comes before the returned message. */
export const MAX_STORED_BYTES = 256 * 1024;
/**
 * Bytes of a message the receiver keeps in memory and reads (the rest is counted and dropped):
 * reports and prose bounces state their verdict at the start; the returned original follows.
 * Bounds memory to this per connection whatever the size limit.
 */
export const MAX_READ_BYTES = 1024 * 1024;

export interface InboundFeedbackRow {
  projectId: string | null;
  emailId: string | null;
  remoteAddress: string;
  helo: string | null;
  mailFrom: string;
  rcptTo: string;
  messageId: string | null;
  raw: Buffer;
  /** The whole message's size (raw may be its start only). */
  size: number;
  kind: string;
  result: Record<string, unknown>;
  outcome: string;
}

/** Stores received messages with what was made of them (migration 0032), one statement. */
export async function insertInboundFeedback(trx: Transaction<Database>, rows: readonly InboundFeedbackRow[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map(
    (r) => sql`(${r.projectId}::uuid, ${r.emailId}::uuid, ${r.remoteAddress.slice(0, 100)}, ${r.helo?.slice(0, 255) ?? null}, ${r.mailFrom.slice(0, 320)},
      ${r.rcptTo.slice(0, 320)}, ${r.messageId?.slice(0, 998) ?? null}, ${r.raw.subarray(0, MAX_STORED_BYTES)}, ${r.size},
      ${r.size > MAX_STORED_BYTES}, ${r.kind}, ${JSON.stringify(r.result)}::jsonb, ${r.outcome})`,
  );
  await sql`
    INSERT INTO inbound_feedback (project_id, email_id, remote_address, helo, mail_from, rcpt_to, message_id, raw, raw_size, raw_truncated, kind, result, outcome)
    VALUES ${sql.join(values)}`.execute(trx);
}

/** A stored report as the operator CLI lists and replays it. */
export interface StoredFeedback {
  id: string;
  received_at: Date;
  project_id: string | null;
  email_id: string | null;
  remote_address: string;
  helo: string | null;
  mail_from: string;
  rcpt_to: string;
  raw: Buffer;
  raw_size: number;
  raw_truncated: boolean;
  kind: string;
  outcome: string;
  subject: string | null;
}

/** One stored report by id (with its raw bytes); undefined when there is none. */
export async function findStoredFeedback(db: Kysely<Database>, id: string): Promise<StoredFeedback | undefined> {
  const { rows } = await sql<StoredFeedback>`
    SELECT id, received_at, project_id, email_id, remote_address, helo, mail_from, rcpt_to, raw, raw_size, raw_truncated, kind, outcome, result ->> 'subject' AS subject
    FROM inbound_feedback WHERE id = ${id}::uuid`.execute(db);
  return rows[0];
}

/** The newest stored reports, without their bytes (ids are time-ordered: uuid v7, newest first by the primary key). */
export async function listStoredFeedback(db: Kysely<Database>, opts: { projectId?: string; limit: number }): Promise<Omit<StoredFeedback, 'raw'>[]> {
  const where = opts.projectId ? sql`WHERE project_id = ${opts.projectId}::uuid` : sql``;
  const order = opts.projectId ? sql`ORDER BY received_at DESC, id DESC` : sql`ORDER BY id DESC`;
  const { rows } = await sql<Omit<StoredFeedback, 'raw'>>`
    SELECT id, received_at, project_id, email_id, remote_address, helo, mail_from, rcpt_to, raw_size, raw_truncated, kind, outcome, result ->> 'subject' AS subject
    FROM inbound_feedback ${where} ${order} LIMIT ${opts.limit}`.execute(db);
  return rows;
}
