import { ilikeAny, NAME_DATE_SORT_KEYS } from '../../db/query.js';
import { type Expression, type ExpressionBuilder, type Kysely, type Selectable, type SqlBool, sql, type Updateable } from 'kysely';
import type { Database, TemplatesTable } from '../../db/schema.js';
import { type SortDir, type Template, TEMPLATE_LIMITS, type TemplateSort, type TemplateType } from './templates.schema.js';

type TemplateRow = Selectable<TemplatesTable>;

export function rowToTemplate(row: TemplateRow): Template {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    subject: row.subject,
    body: row.body,
    from: row.from_email,
    fromName: row.from_name,
    replyTo: row.reply_to,
    type: row.type,
    projectId: row.project_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The writable fields, camelCase as in the API. */
export interface TemplateValues {
  name: string;
  description: string;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: TemplateType;
}

/** Filters of the template list; every query is also scoped to one project. */
export interface TemplateFilter {
  type?: TemplateType;
  /** Case-insensitive substring of name, description or subject (LIKE wildcards matched literally). */
  search?: string;
}

function filterWhere(projectId: string, filter: TemplateFilter) {
  return (eb: ExpressionBuilder<Database, 'templates'>) => {
    const conditions: Expression<SqlBool>[] = [eb('project_id', '=', projectId)];
    if (filter.type) conditions.push(eb('type', '=', filter.type));
    if (filter.search) conditions.push(ilikeAny(['name', 'description', 'subject'], filter.search));
    return eb.and(conditions);
  };
}

/** Sort keys; names compare case-insensitively, the id breaks ties. */
const SORT_KEYS = NAME_DATE_SORT_KEYS satisfies Record<TemplateSort, unknown>;

/**
 * One page, OFFSET-based (the spec's page list). The id tie-breaker makes the order total, so
 * templates created in one statement (same created_at) never swap between pages.
 */
export async function listTemplatePage(
  db: Kysely<Database>,
  projectId: string,
  opts: { filter: TemplateFilter; sort: TemplateSort; dir: SortDir; limit: number; offset: number },
): Promise<TemplateRow[]> {
  const { dir } = opts;
  let q = db.selectFrom('templates').selectAll().where(filterWhere(projectId, opts.filter)).orderBy(SORT_KEYS[opts.sort], dir);
  if (opts.sort === 'name') q = q.orderBy('name', dir);
  return q.orderBy('id', dir).limit(opts.limit).offset(opts.offset).execute();
}

export async function countTemplates(db: Kysely<Database>, projectId: string, filter: TemplateFilter): Promise<number> {
  const row = await db
    .selectFrom('templates')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(filterWhere(projectId, filter))
    .executeTakeFirstOrThrow();
  return row.n;
}

export async function findTemplateById(db: Kysely<Database>, projectId: string, id: string): Promise<TemplateRow | undefined> {
  return db.selectFrom('templates').selectAll().where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
}

export async function insertTemplate(db: Kysely<Database>, projectId: string, values: TemplateValues): Promise<TemplateRow> {
  return db
    .insertInto('templates')
    .values({
      project_id: projectId,
      name: values.name,
      description: values.description,
      subject: values.subject,
      body: values.body,
      from_email: values.from,
      from_name: values.fromName,
      reply_to: values.replyTo,
      type: values.type,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Writes the given fields and bumps updated_at; undefined when the template is not in the project. */
export async function updateTemplate(
  db: Kysely<Database>,
  projectId: string,
  id: string,
  changes: Partial<TemplateValues>,
): Promise<TemplateRow | undefined> {
  // Kysely leaves undefined values out of the SET list.
  const set: Updateable<TemplatesTable> = {
    name: changes.name,
    description: changes.description,
    subject: changes.subject,
    body: changes.body,
    from_email: changes.from,
    from_name: changes.fromName,
    reply_to: changes.replyTo,
    type: changes.type,
  };
  return db
    .updateTable('templates')
    .set({ ...set, updated_at: sql`now()` })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** True when the template existed in the project. Emails that used it keep their rows (FK ON DELETE SET NULL). */
export async function deleteTemplate(db: Kysely<Database>, projectId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('templates').where('project_id', '=', projectId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

const COPY_SUFFIX = ' (copy)';

/**
 * A copy of the template in one statement, named "<name> (copy)" (the name shortened so the
 * copy stays within the name limit); undefined when the template is not in the project.
 */
export async function copyTemplate(db: Kysely<Database>, projectId: string, id: string): Promise<TemplateRow | undefined> {
  const keep = TEMPLATE_LIMITS.name - COPY_SUFFIX.length;
  const { rows } = await sql<TemplateRow>`
    INSERT INTO templates (project_id, name, description, subject, body, from_email, from_name, reply_to, type)
    SELECT project_id, left(name, ${keep}) || ${COPY_SUFFIX}, description, subject, body, from_email, from_name, reply_to, type
    FROM templates
    WHERE project_id = ${projectId} AND id = ${id}
    RETURNING *`.execute(db);
  return rows[0];
}

/** Templates of the project among `ids` (workflow SEND_EMAIL steps), in one query. */
export async function findTemplatesByIds(db: Kysely<Database>, projectId: string, ids: readonly string[]): Promise<TemplateRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('templates').selectAll().where('project_id', '=', projectId).where('id', 'in', ids).execute();
}
