import { type Expression, type ExpressionBuilder, type Kysely, type RawBuilder, type SqlBool, sql, type Transaction } from 'kysely';
import { likePattern } from '../../db/query.js';
import type { Database, SuppressionReason, SuppressionRow } from '../../db/schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/**
 * Why an email to a suppressed address is not sent, computed in SQL from the entry `alias`
 * (every reader uses this one expression: the send batch, the fan-out, delivery), e.g. "Not
 * sent: the address is suppressed (hard bounce on 2025-06-01); …". NULL when no entry joined.
 */
export function suppressionNoteSql(alias: string): RawBuilder<string | null> {
  const s = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<string | null>`CASE WHEN ${s('email')} IS NOT NULL THEN
    'Not sent: the address is suppressed ('
    || CASE ${s('reason')} WHEN 'HARD_BOUNCE' THEN 'hard bounce' WHEN 'COMPLAINT' THEN 'complaint' ELSE 'added manually' END
    || ' on ' || to_char(${s('created_at')} AT TIME ZONE 'UTC', 'YYYY-MM-DD')
    || '); remove it from the suppression list to send to it again' END`;
}

/**
 * A LEFT JOIN of the project's entry for `email` (an SQL expression of the outer query, already
 * lower-cased) as `alias`, for set-based readers (INSERT … SELECT of the fan-out): one hash or
 * index join over the (project_id, email) key, never a query per row. Use with
 * {@link suppressionNoteSql}(alias).
 */
export function suppressionJoinSql(projectId: string, email: Expression<string> | RawBuilder<string>, alias: string): RawBuilder<unknown> {
  return sql`LEFT JOIN suppressions ${sql.id(alias)} ON ${sql.ref(`${alias}.project_id`)} = ${projectId}::uuid AND ${sql.ref(`${alias}.email`)} = ${email}`;
}

/** The note of each suppressed address among `emails` (lower-cased): one `= ANY` query on the key. */
export async function findSuppressionNotes(db: Db, projectId: string, emails: readonly string[]): Promise<Map<string, string>> {
  if (emails.length === 0) return new Map();
  const { rows } = await sql<{ email: string; note: string }>`
    SELECT s.email, ${suppressionNoteSql('s')} AS note
    FROM suppressions s
    WHERE s.project_id = ${projectId}::uuid AND s.email = ANY(${[...new Set(emails)]}::text[])`.execute(db);
  return new Map(rows.map((r) => [r.email, r.note]));
}

/** One entry to add. */
export interface NewSuppression {
  projectId: string;
  /** Lower-cased. */
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  sourceEmailId: string | null;
}

/**
 * Adds entries in one statement; an address already listed keeps its entry (the first reason
 * stays). Answers the addresses added.
 */
export async function insertSuppressions(db: Db, entries: readonly NewSuppression[]): Promise<string[]> {
  if (entries.length === 0) return [];
  const { rows } = await sql<{ email: string }>`
    INSERT INTO suppressions (project_id, email, reason, detail, source_email_id)
    SELECT * FROM unnest(${entries.map((e) => e.projectId)}::uuid[], ${entries.map((e) => e.email)}::text[],
                         ${entries.map((e) => e.reason)}::text[], ${entries.map((e) => e.detail)}::text[],
                         ${entries.map((e) => e.sourceEmailId)}::uuid[])
    ON CONFLICT (project_id, email) DO NOTHING
    RETURNING email`.execute(db);
  return rows.map((r) => r.email);
}

export async function findSuppression(db: Db, projectId: string, email: string): Promise<SuppressionRow | undefined> {
  return db.selectFrom('suppressions').selectAll().where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
}

/** Deletes one entry; false when the project has none for the address. */
export async function deleteSuppression(db: Db, projectId: string, email: string): Promise<boolean> {
  const result = await db.deleteFrom('suppressions').where('project_id', '=', projectId).where('email', '=', email).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Filters of the list; every query is also scoped to one project. */
export interface SuppressionFilter {
  /** Case-insensitive substring of the address (LIKE wildcards matched literally). */
  search?: string;
  reason?: SuppressionReason;
}

/** Where a page starts (exclusive): created_at with PostgreSQL's microseconds, then the address. */
export interface SuppressionPosition {
  createdAt: string;
  email: string;
}

export type ListedSuppressionRow = SuppressionRow & { created_key: string };

function filterWhere(projectId: string, filter: SuppressionFilter) {
  return (eb: ExpressionBuilder<Database, 'suppressions'>) => {
    const conditions: Expression<SqlBool>[] = [eb('project_id', '=', projectId)];
    if (filter.reason) conditions.push(eb('reason', '=', filter.reason));
    // Addresses are stored lower-cased (CHECK), so LIKE on the lower-cased pattern is case-insensitive.
    if (filter.search) conditions.push(sql<SqlBool>`email LIKE lower(${likePattern(filter.search)}) ESCAPE '\\'`);
    return eb.and(conditions);
  };
}

/** UTC with microseconds: round-trips created_at exactly through a cursor. */
const createdKey = sql<string>`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** One keyset page, newest first: (created_at, email) descending over the project's btree. */
export async function listSuppressionPage(
  db: Db,
  projectId: string,
  opts: { filter: SuppressionFilter; after?: SuppressionPosition; limit: number },
): Promise<ListedSuppressionRow[]> {
  let q = db.selectFrom('suppressions').selectAll().select(createdKey.as('created_key')).where(filterWhere(projectId, opts.filter));
  if (opts.after) q = q.where(sql<SqlBool>`(created_at, email) < (${opts.after.createdAt}::timestamptz, ${opts.after.email})`);
  return q.orderBy('created_at', 'desc').orderBy('email', 'desc').limit(opts.limit).execute();
}

export async function countSuppressions(db: Db, projectId: string, filter: SuppressionFilter): Promise<number> {
  const row = await db
    .selectFrom('suppressions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(filterWhere(projectId, filter))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
