import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { uniqueEmail } from '../../helpers/accounts.js';
import type { Db } from '../../../src/db/connection.js';
import type { EmailStatus, EmailType } from '../../../src/db/schema.js';

/**
 * Rows the tests of tracking and notifications start from, inserted directly: the send
 * pipeline is built elsewhere, and these tests are about what happens after sending.
 */

export async function seedContact(db: Db, projectId: string, opts: { email?: string; subscribed?: boolean } = {}): Promise<string> {
  const row = await db.db
    .insertInto('contacts')
    .values({ project_id: projectId, email: opts.email ?? uniqueEmail('rcpt'), subscribed: opts.subscribed ?? true })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export interface SeedEmail {
  contactId: string | null;
  type?: EmailType;
  status?: EmailStatus;
  /** Default: `<uuid@test.example>` */
  messageId?: string;
  /** Default: now when the status is past SENDING. */
  sentAt?: Date | null;
}

export async function seedEmail(db: Db, projectId: string, opts: SeedEmail): Promise<{ id: string; messageId: string }> {
  const messageId = opts.messageId ?? `<${randomUUID()}@test.example>`;
  const status = opts.status ?? 'SENT';
  const row = await db.db
    .insertInto('emails')
    .values({
      project_id: projectId,
      contact_id: opts.contactId,
      source: 'SEND',
      type: opts.type ?? 'MARKETING',
      to_email: 'rcpt@example.com',
      from_email: 'news@sender.example',
      subject: 'Hello',
      html: '<p>Hello</p>',
      status,
      message_id: messageId,
      sent_at: opts.sentAt === undefined ? (['PENDING', 'SENDING'].includes(status) ? null : new Date()) : opts.sentAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: row.id, messageId };
}

/** `count` SENT emails of one contact in one statement (reputation tests need hundreds). */
export async function seedSentEmails(db: Db, projectId: string, contactId: string, count: number, sentAt = 'now()'): Promise<void> {
  await sql`
    INSERT INTO emails (project_id, contact_id, source, type, to_email, from_email, subject, html, status, message_id, sent_at)
    SELECT ${projectId}, ${contactId}, 'SEND', 'MARKETING', 'rcpt@example.com', 'news@sender.example', 'Hello', '<p>Hello</p>',
           'SENT', '<' || gen_random_uuid() || '@bulk.test.example>', ${sql.raw(sentAt)}
    FROM generate_series(1, ${count})`.execute(db.db);
}

export const emailRow = (db: Db, id: string) => db.db.selectFrom('emails').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
export const contactRow = (db: Db, id: string) => db.db.selectFrom('contacts').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/**
 * Names of a contact's events, oldest first. Events of one transaction share created_at and
 * their v7 ids are not ordered within a millisecond, so ties are ordered by name.
 */
export async function eventNames(db: Db, contactId: string): Promise<string[]> {
  const rows = await db.db.selectFrom('events').select('name').where('contact_id', '=', contactId).orderBy('created_at').orderBy('name').execute();
  return rows.map((r) => r.name);
}
