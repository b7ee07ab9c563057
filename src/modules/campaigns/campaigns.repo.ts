import { conditionUsesField } from '../../conditions/index.js';
import { ilikeAny, NAME_DATE_SORT_KEYS } from '../../db/query.js';
import { variableUsePattern } from '../../mail/render.js';
import { type Expression, type ExpressionBuilder, type Kysely, type SqlBool, sql, type Transaction, type Updateable } from 'kysely';
import type { AudienceType, CampaignRow, CampaignsTable, CampaignStatus, Database, EmailType, StoredCondition } from '../../db/schema.js';
import type { CampaignEmailCounts } from '../emails/index.js';
import type { SortDir } from '../templates/index.js';
import type { Campaign, CampaignSort } from './campaigns.schema.js';

type Db = Kysely<Database> | Transaction<Database>;

/** Milestone counts of one campaign, computed from its email rows by the emails module (never stored). */
export type CampaignCounts = CampaignEmailCounts;

export const ZERO_COUNTS: CampaignCounts = { total: 0, pending: 0, sent: 0, unconfirmed: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, failed: 0, cancelled: 0 };

export function rowToCampaign(row: CampaignRow, counts: CampaignCounts = ZERO_COUNTS): Campaign {
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
    status: row.status,
    audienceType: row.audience_type,
    audienceCondition: row.audience_condition,
    segmentId: row.segment_id,
    scheduledFor: row.scheduled_for?.toISOString() ?? null,
    totalRecipients: row.total_recipients,
    sentCount: counts.sent,
    unconfirmedCount: counts.unconfirmed,
    deliveredCount: counts.delivered,
    openedCount: counts.opened,
    clickedCount: counts.clicked,
    bouncedCount: counts.bounced,
    projectId: row.project_id,
    startedAt: row.started_at?.toISOString() ?? null,
    sentAt: row.sent_at?.toISOString() ?? null,
    cancelledAt: row.cancelled_at?.toISOString() ?? null,
    statusReason: row.status_reason ? { code: row.status_reason, message: row.status_message ?? '' } : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The writable fields, camelCase as in the API. */
export interface CampaignValues {
  name: string;
  description: string;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  type: EmailType;
  audienceType: AudienceType;
  segmentId: string | null;
  audienceCondition: StoredCondition | null;
}

export interface CampaignFilter {
  status?: CampaignStatus;
  search?: string;
}

function filterWhere(projectId: string, filter: CampaignFilter) {
  return (eb: ExpressionBuilder<Database, 'campaigns'>) => {
    const conditions: Expression<SqlBool>[] = [eb('project_id', '=', projectId)];
    if (filter.status) conditions.push(eb('status', '=', filter.status));
    if (filter.search) conditions.push(ilikeAny(['name', 'subject', 'from_email'], filter.search));
    return eb.and(conditions);
  };
}

const SORT_KEYS = NAME_DATE_SORT_KEYS satisfies Record<CampaignSort, unknown>;

export async function listCampaignPage(
  db: Db,
  projectId: string,
  opts: { filter: CampaignFilter; sort: CampaignSort; dir: SortDir; limit: number; offset: number },
): Promise<CampaignRow[]> {
  const { dir } = opts;
  let q = db.selectFrom('campaigns').selectAll().where(filterWhere(projectId, opts.filter)).orderBy(SORT_KEYS[opts.sort], dir);
  if (opts.sort === 'name') q = q.orderBy('name', dir);
  return q.orderBy('id', dir).limit(opts.limit).offset(opts.offset).execute();
}

export async function countCampaigns(db: Db, projectId: string, filter: CampaignFilter): Promise<number> {
  const row = await db
    .selectFrom('campaigns')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(filterWhere(projectId, filter))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function findCampaignById(db: Db, projectId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<CampaignRow | undefined> {
  let q = db.selectFrom('campaigns').selectAll().where('project_id', '=', projectId).where('id', '=', id);
  if (opts.forUpdate) q = q.forUpdate();
  return q.executeTakeFirst();
}

const toColumns = (v: Partial<CampaignValues>): Updateable<CampaignsTable> => ({
  name: v.name,
  description: v.description,
  subject: v.subject,
  body: v.body,
  from_email: v.from,
  from_name: v.fromName,
  reply_to: v.replyTo,
  type: v.type,
  audience_type: v.audienceType,
  segment_id: v.segmentId,
  audience_condition: v.audienceCondition === undefined ? undefined : v.audienceCondition === null ? null : JSON.stringify(v.audienceCondition),
});

export async function insertCampaign(db: Db, projectId: string, values: CampaignValues): Promise<CampaignRow> {
  const c = toColumns(values);
  return db
    .insertInto('campaigns')
    .values({ ...c, project_id: projectId, from_email: values.from })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function updateCampaign(db: Db, projectId: string, id: string, values: Partial<CampaignValues>): Promise<CampaignRow | undefined> {
  return db
    .updateTable('campaigns')
    .set({ ...toColumns(values), updated_at: sql`now()` })
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes the campaign (the caller holds its lock and checked its state); its emails keep their rows. */
export async function deleteCampaign(db: Db, projectId: string, id: string): Promise<CampaignRow | undefined> {
  return db.deleteFrom('campaigns').where('project_id', '=', projectId).where('id', '=', id).returningAll().executeTakeFirst();
}

const COPY_SUFFIX = ' (copy)';

/** A DRAFT copy in one statement: content and audience kept; schedule, counters and send times not. */
export async function copyCampaign(db: Db, projectId: string, id: string, nameLimit: number): Promise<CampaignRow | undefined> {
  const keep = nameLimit - COPY_SUFFIX.length;
  const { rows } = await sql<CampaignRow>`
    INSERT INTO campaigns (project_id, name, description, subject, body, from_email, from_name, reply_to, type,
                           audience_type, audience_condition, segment_id)
    SELECT project_id, left(name, ${keep}) || ${COPY_SUFFIX}, description, subject, body, from_email, from_name, reply_to, type,
           audience_type, audience_condition, segment_id
    FROM campaigns
    WHERE project_id = ${projectId} AND id = ${id}
    RETURNING *`.execute(db);
  return rows[0];
}

export async function segmentExists(db: Db, projectId: string, segmentId: string): Promise<boolean> {
  const row = await db.selectFrom('segments').select('id').where('project_id', '=', projectId).where('id', '=', segmentId).executeTakeFirst();
  return row !== undefined;
}

/** A contact of the project by address (for test sends), or undefined. */
export async function findContactByEmail(db: Db, projectId: string, email: string) {
  return db
    .selectFrom('contacts')
    .select(['id', 'email', 'data', 'subscribed'])
    .where('project_id', '=', projectId)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();
}

/**
 * Campaigns whose audience condition filters on `field` (`data.<key>`, `event.<name>`) or, with
 * `variable`, whose subject or body uses `{{variable}}` — for the usage endpoints. Newest first.
 */
export async function campaignsUsing(db: Db, projectId: string, use: { field: string; variable?: string }): Promise<{ id: string; name: string }[]> {
  return db
    .selectFrom('campaigns')
    .select(['id', 'name'])
    .where('project_id', '=', projectId)
    .where((eb) => {
      const uses: Expression<SqlBool>[] = [conditionUsesField(sql.ref('audience_condition'), use.field)];
      if (use.variable !== undefined) {
        const pattern = variableUsePattern(use.variable);
        uses.push(eb('subject', '~', pattern), eb('body', '~', pattern));
      }
      return eb.or(uses);
    })
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}
