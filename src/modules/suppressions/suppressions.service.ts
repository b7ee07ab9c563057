import { z } from 'zod';
import type { Kysely } from 'kysely';
import type { Database, SuppressionRow } from '../../db/schema.js';
import { notFound, validationError } from '../../http/errors.js';
import { normalizeEmail } from '../contacts/index.js';
import {
  countSuppressions,
  deleteSuppression,
  findSuppression,
  insertSuppressions,
  listSuppressionPage,
  type ListedSuppressionRow,
  type SuppressionFilter,
  type SuppressionPosition,
} from './suppressions.repo.js';
import type { AddSuppressionBody, ListSuppressionsQuery, Suppression, SuppressionList } from './suppressions.schema.js';

export function rowToSuppression(row: SuppressionRow): Suppression {
  return {
    email: row.email,
    reason: row.reason,
    detail: row.detail,
    sourceEmailId: row.source_email_id,
    createdAt: row.created_at.toISOString(),
  };
}

// ---- Cursor: base64url of [created_at with microseconds, email] of the last entry of the page ----

const CursorPayload = z.tuple([z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/), z.string().min(1).max(254)]);
const badCursor = () => validationError([{ field: 'cursor', message: 'Malformed cursor: pass the cursor of the previous page as is', code: 'invalid_string' }]);

const encodeCursor = (last: ListedSuppressionRow) => Buffer.from(JSON.stringify([last.created_key, last.email])).toString('base64url');

function decodeCursor(cursor: string): SuppressionPosition {
  let json: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badCursor();
  }
  const parsed = CursorPayload.safeParse(json);
  // A real instant (month 13 or Feb 30 would fail in the database).
  const instant = parsed.success ? `${parsed.data[0].slice(0, 23)}Z` : '';
  if (!parsed.success || Number.isNaN(Date.parse(instant)) || new Date(instant).toISOString() !== instant) throw badCursor();
  return { createdAt: parsed.data[0], email: parsed.data[1] };
}

/** GET /suppressions: newest first, keyset pages. */
export async function listSuppressions(db: Kysely<Database>, projectId: string, query: ListSuppressionsQuery): Promise<SuppressionList> {
  const after = query.cursor ? decodeCursor(query.cursor) : undefined;
  const filter: SuppressionFilter = { search: query.search?.trim() || undefined, reason: query.reason };
  const [rows, total] = await Promise.all([
    listSuppressionPage(db, projectId, { filter, after, limit: query.limit + 1 }),
    after ? 0 : countSuppressions(db, projectId, filter),
  ]);
  const hasMore = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return { data: page.map(rowToSuppression), cursor: hasMore && last ? encodeCursor(last) : null, hasMore, total };
}

/**
 * POST /suppressions: a MANUAL entry. Idempotent on the address: an existing entry (whatever its
 * reason) is answered as is, with `created: false` (200), and left unchanged.
 */
export async function addSuppression(
  db: Kysely<Database>,
  projectId: string,
  body: AddSuppressionBody,
): Promise<{ suppression: Suppression; created: boolean }> {
  const email = normalizeEmail(body.email);
  const added = await insertSuppressions(db, [{ projectId, email, reason: 'MANUAL', detail: body.detail?.trim() || null, sourceEmailId: null }]);
  const row = await findSuppression(db, projectId, email);
  // Removed by a concurrent DELETE between the two statements: the caller may retry.
  if (!row) throw notFound('Suppression');
  return { suppression: rowToSuppression(row), created: added.length > 0 };
}

/** DELETE /suppressions/:email: later sends to the address are delivered again. */
export async function removeSuppression(db: Kysely<Database>, projectId: string, email: string): Promise<void> {
  if (!(await deleteSuppression(db, projectId, normalizeEmail(email)))) throw notFound('Suppression');
}
