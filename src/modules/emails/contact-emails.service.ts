import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound, validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { type ContactEmailPosition, type ContactEmailRow, contactInProject, countContactEmails, listContactEmails } from './contact-emails.repo.js';
import type { ContactEmail, ContactEmailList, ContactEmailsQuery } from './emails.schema.js';
import { engagement } from './emails.service.js';

const POSITION_AT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** Opaque cursor: base64url of `<created_at with microseconds>|<id>` of the page's last email. */
export const encodeContactEmailCursor = (p: ContactEmailPosition): string => Buffer.from(`${p.at}|${p.id}`).toString('base64url');

/** The position a cursor encodes; 422 on field `cursor` when it is not one this list made. */
export function decodeContactEmailCursor(cursor: string): ContactEmailPosition {
  const [at, id, extra] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (at === undefined || id === undefined || extra !== undefined || !POSITION_AT.test(at) || !isUuid(id) || !isRealInstant(at)) {
    throw validationError([{ field: 'cursor', code: 'invalid_string', message: 'Invalid cursor: pass the cursor of the previous page as is' }]);
  }
  return { at, id };
}

/** The calendar date and time exist (PostgreSQL would refuse 2026-02-30 with an error, a 500). */
function isRealInstant(at: string): boolean {
  const millis = at.slice(0, 23);
  const parsed = new Date(`${millis}Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 23) === millis;
}

const named = (id: string | null, name: string | null) => (id === null ? null : { id, name: name ?? '' });

export function rowToContactEmail(row: ContactEmailRow): ContactEmail {
  return {
    id: row.id,
    subject: row.subject,
    status: row.status,
    unconfirmed: row.unconfirmed,
    error: row.error,
    source: row.source,
    type: row.type,
    to: row.to_email,
    campaign: named(row.campaign_id, row.campaign_name),
    template: named(row.template_id, row.template_name),
    workflow: named(row.workflow_id, row.workflow_name),
    ...engagement(row),
  };
}

/**
 * GET /emails/contact/:contactId: the emails the contact was sent (every source: /v1/send,
 * campaigns, workflows, tests), newest first, cursor-paged; `total` on the first page only.
 * Another project's contact, an unknown and a malformed id are 404 Contact.
 */
export async function listEmailsOfContact(db: Kysely<Database>, projectId: string, contactId: string, query: ContactEmailsQuery): Promise<ContactEmailList> {
  // The cursor is checked first: a bad one is a 422 whatever the contact.
  const after = query.cursor ? decodeContactEmailCursor(query.cursor) : undefined;
  if (!isUuid(contactId) || !(await contactInProject(db, projectId, contactId))) throw notFound('Contact');
  const [rows, total] = await Promise.all([
    listContactEmails(db, projectId, contactId, { limit: query.limit + 1, after }),
    after ? 0 : countContactEmails(db, contactId),
  ]);
  const hasMore = rows.length > query.limit;
  const page = hasMore ? rows.slice(0, query.limit) : rows;
  const last = page.at(-1);
  return {
    data: page.map(rowToContactEmail),
    cursor: hasMore && last ? encodeContactEmailCursor({ at: last.position_at, id: last.id }) : null,
    hasMore,
    total,
  };
}
