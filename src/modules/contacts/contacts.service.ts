import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { notFound, validationError } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { uncountContactEvents } from '../analytics/index.js';
import {
  type ContactFilter,
  type ContactPosition,
  countContacts,
  deleteContact,
  findContactById,
  findContactsByEmails,
  type ListedContactRow,
  listContactPage,
  rowToContact,
  updateContact,
} from './contacts.repo.js';
import {
  type Contact,
  CONTACT_SORTS,
  type ContactList,
  type ContactSort,
  type ListContactsQuery,
  type LookupResult,
  SORT_DIRS,
  type SortDir,
  type UpdateContactBody,
  type UpsertedContact,
} from './contacts.schema.js';
import { upsertContacts } from './contacts.upsert.js';
import { type DataInput, dataLimitError, normalizeEmail, resolveData } from './data-rules.js';

// ---- Cursor: base64url of {s: sort, d: dir, k: keyset of the last contact of the page} ----

const CursorPayload = z.object({
  s: z.enum(CONTACT_SORTS),
  d: z.enum(SORT_DIRS),
  k: z.array(z.string()).min(1).max(2),
});

const MICROS_RE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;

/** A real instant in the cursor's format (month 13 or Feb 30 would fail in the database). */
function isMicrosTimestamp(s: string): boolean {
  if (!MICROS_RE.test(s)) return false;
  const ms = `${s.slice(0, 23)}Z`;
  const date = new Date(ms);
  return !Number.isNaN(date.getTime()) && date.toISOString() === ms;
}

const badCursor = (message: string) => validationError([{ field: 'cursor', message, code: 'invalid_string' }]);

export function encodeCursor(sort: ContactSort, dir: SortDir, last: ListedContactRow): string {
  const k = sort === 'email' ? [last.email] : [last.created_key, last.id];
  return Buffer.from(JSON.stringify({ s: sort, d: dir, k })).toString('base64url');
}

/** The position a cursor encodes; 422 on field `cursor` when malformed or made for another sort/dir. */
export function decodeCursor(cursor: string, sort: ContactSort, dir: SortDir): ContactPosition {
  let json: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor('Malformed cursor: pass the cursor of the previous page as is');
  }
  const parsed = CursorPayload.safeParse(json);
  if (!parsed.success) throw badCursor('Malformed cursor: pass the cursor of the previous page as is');
  const { s, d, k } = parsed.data;
  if (s !== sort || d !== dir) {
    throw badCursor(`This cursor belongs to a list sorted by ${s} ${d}; pass the same sort and dir, or start again without a cursor`);
  }
  const [first, second] = k;
  if (s === 'email' && first !== undefined && second === undefined) return { sort: 'email', email: first };
  if (s === 'createdAt' && first !== undefined && second !== undefined && isMicrosTimestamp(first) && isUuid(second)) {
    return { sort: 'createdAt', createdAt: first, id: second };
  }
  throw badCursor('Malformed cursor: pass the cursor of the previous page as is');
}

// ---- Routes' operations ----

export async function listContacts(db: Kysely<Database>, projectId: string, query: ListContactsQuery): Promise<ContactList> {
  const { sort, dir, limit } = query;
  // An empty cursor (a client sending `cursor=` on the first call) means the first page.
  const after = query.cursor ? decodeCursor(query.cursor, sort, dir) : undefined;
  const filter: ContactFilter = { search: query.search?.trim() || undefined, subscribed: query.subscribed };
  const [rows, total] = await Promise.all([
    listContactPage(db, projectId, { filter, sort, dir, after, limit: limit + 1 }),
    after ? 0 : countContacts(db, projectId, filter),
  ]);
  const hasMore = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    data: page.map(rowToContact),
    cursor: hasMore && last ? encodeCursor(sort, dir, last) : null,
    hasMore,
    total,
  };
}

export async function getContact(db: Kysely<Database>, projectId: string, id: string): Promise<Contact> {
  const row = isUuid(id) ? await findContactById(db, projectId, id) : undefined;
  if (!row) throw notFound('Contact');
  return rowToContact(row);
}

/**
 * POST /contacts: upsert by email. A new contact is subscribed unless `subscribed` says
 * otherwise; an existing one keeps its state unless `subscribed` is given (docs/contacts.md).
 */
export async function upsertContact(
  db: Kysely<Database>,
  projectId: string,
  input: { email: string; subscribed?: boolean; data?: DataInput },
): Promise<UpsertedContact> {
  const [result] = await db.transaction().execute((trx) =>
    upsertContacts(trx, projectId, [
      { email: normalizeEmail(input.email), patch: resolveData(input.data).patch, subscribed: input.subscribed, subscribedIfNew: true },
    ]),
  );
  if (!result) throw new Error('upsertContacts returned no result');
  return { ...rowToContact(result.row), _meta: { isNew: result.isNew, isUpdate: !result.isNew } };
}

export async function patchContact(db: Kysely<Database>, projectId: string, id: string, body: UpdateContactBody): Promise<Contact> {
  const row = isUuid(id)
    ? await updateContact(db, projectId, id, {
        email: body.email === undefined ? undefined : normalizeEmail(body.email),
        subscribed: body.subscribed,
        patch: resolveData(body.data).patch,
      })
    : undefined;
  if (!row) throw notFound('Contact');
  if (row.breach) throw dataLimitError(row.breach);
  return rowToContact(row);
}

export async function removeContact(db: Kysely<Database>, projectId: string, id: string): Promise<void> {
  if (!isUuid(id)) throw notFound('Contact');
  const deleted = await db.transaction().execute(async (trx) => {
    // Its tracked events go with it (ON DELETE CASCADE): out of the analytics counts first.
    await uncountContactEvents(trx, projectId, [id]);
    return deleteContact(trx, projectId, id);
  });
  if (!deleted) throw notFound('Contact');
}

/** Existence of each given email, in input order, echoed as given; compared case-insensitively. */
export async function lookupContacts(db: Kysely<Database>, projectId: string, emails: readonly string[]): Promise<LookupResult> {
  const normalized = emails.map(normalizeEmail);
  const rows = await findContactsByEmails(db, projectId, [...new Set(normalized)]);
  const byEmail = new Map(rows.map((r) => [r.email, rowToContact(r)]));
  return {
    data: emails.map((email, i) => {
      const contact = byEmail.get(normalized[i] ?? '') ?? null;
      return { email, exists: contact !== null, contact };
    }),
  };
}
