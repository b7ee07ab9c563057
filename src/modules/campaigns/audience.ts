import { type Kysely, type RawBuilder, sql, type SqlBool } from 'kysely';
import { compileCondition, validateCondition } from '../../conditions/index.js';
import { type ConditionTree, ConditionTreeSchema } from '../../conditions/tree.js';
import type { CampaignRow, Database, EmailType, StoredCondition } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import { suppressionJoinSql } from '../suppressions/index.js';
import { segmentExists } from './campaigns.repo.js';

/** The audience fields of a campaign, after PUT/POST merging. */
export interface AudienceInput {
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED';
  segmentId: string | null | undefined;
  audienceCondition: unknown;
}

export interface Audience {
  audienceType: 'ALL' | 'SEGMENT' | 'FILTERED';
  segmentId: string | null;
  audienceCondition: StoredCondition | null;
}

const asStored = (tree: ConditionTree): StoredCondition => ({ logic: tree.logic, groups: tree.groups });

/**
 * Checks the audience rules (422 naming the field): SEGMENT needs a segment of the project,
 * FILTERED a valid condition tree. The field the type does not use is cleared, so an ALL
 * campaign never keeps a segment reference (which would block that segment's deletion).
 */
export async function resolveAudience(db: Kysely<Database>, projectId: string, input: AudienceInput): Promise<Audience> {
  if (input.audienceType === 'SEGMENT') {
    if (!input.segmentId) throw validationError([{ field: 'segmentId', message: 'Required when audienceType is SEGMENT', code: 'invalid_type' }]);
    if (!(await segmentExists(db, projectId, input.segmentId))) {
      throw validationError([{ field: 'segmentId', message: 'No such segment in this project', code: 'invalid_string' }]);
    }
    return { audienceType: 'SEGMENT', segmentId: input.segmentId, audienceCondition: null };
  }
  if (input.audienceType === 'FILTERED') {
    if (input.audienceCondition === undefined || input.audienceCondition === null) {
      throw validationError([{ field: 'audienceCondition', message: 'Required when audienceType is FILTERED', code: 'invalid_type' }]);
    }
    const tree = await validateCondition(db, projectId, input.audienceCondition, 'audienceCondition');
    return { audienceType: 'FILTERED', segmentId: null, audienceCondition: asStored(tree) };
  }
  return { audienceType: 'ALL', segmentId: null, audienceCondition: null };
}

/** What an audience is made of, on a campaign row (or an unsaved audience shaped like one). */
type AudienceSource = Pick<CampaignRow, 'project_id' | 'audience_type' | 'segment_id' | 'audience_condition'>;

/** The stored audience cannot be evaluated: the campaign-send job ends the campaign at once (start-failure.ts). */
export class AudienceUnusableError extends Error {
  override readonly name = 'AudienceUnusableError';
}

/**
 * The campaign's audience as ONE SQL boolean over the contacts row `c` (DESIGN §7): ALL is
 * every contact; a STATIC segment is its member rows; a DYNAMIC segment is its condition
 * compiled live; FILTERED is the campaign's own condition. An audience that no longer exists
 * (its segment gone, a DYNAMIC segment or FILTERED campaign without a condition) throws
 * AudienceUnusableError rather than matching nobody: a campaign "sent" to nobody would hide it.
 * A stored condition that no longer parses throws a ZodError (also never retried).
 */
export async function audienceSql(db: Kysely<Database>, campaign: AudienceSource): Promise<RawBuilder<SqlBool>> {
  if (campaign.audience_type === 'ALL') return sql<SqlBool>`true`;
  if (campaign.audience_type === 'FILTERED') {
    if (!campaign.audience_condition) throw new AudienceUnusableError('The campaign has no audience condition');
    return compileCondition(db, campaign.project_id, ConditionTreeSchema.parse(campaign.audience_condition), 'c');
  }
  const segment = campaign.segment_id
    ? await db
        .selectFrom('segments')
        .select(['id', 'type', 'condition'])
        .where('project_id', '=', campaign.project_id)
        .where('id', '=', campaign.segment_id)
        .executeTakeFirst()
    : undefined;
  if (!segment) throw new AudienceUnusableError('The audience segment no longer exists');
  if (segment.type === 'STATIC') {
    return sql<SqlBool>`EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = ${segment.id} AND sm.contact_id = c.id)`;
  }
  if (!segment.condition) throw new AudienceUnusableError('The audience segment has no condition');
  return compileCondition(db, campaign.project_id, ConditionTreeSchema.parse(segment.condition), 'c');
}

/**
 * How many emails sending the campaign now would queue: its audience (MARKETING: subscribed
 * contacts only) less suppressed addresses, as insertCampaignEmails materialises them; one count
 * query. The billing cap check of send and schedule. An audience that cannot be evaluated counts
 * 0 here: the send job ends that campaign with the reason (start-failure.ts).
 */
export async function countCampaignRecipients(db: Kysely<Database>, campaign: CampaignRow): Promise<number> {
  let audience: RawBuilder<SqlBool>;
  try {
    audience = await audienceSql(db, campaign);
  } catch {
    return 0;
  }
  return countRecipients(db, campaign.project_id, audience, campaign.type === 'MARKETING');
}

/** The contacts of `audience` less suppressed addresses (and, for marketing, the unsubscribed): one count query. */
async function countRecipients(db: Kysely<Database>, projectId: string, audience: RawBuilder<SqlBool>, marketing: boolean): Promise<number> {
  const subscribed = marketing ? sql`AND c.subscribed` : sql``;
  const { rows } = await sql<{ n: string }>`
    SELECT count(*) AS n FROM contacts c ${suppressionJoinSql(projectId, sql.ref('c.email'), 'sup')}
    WHERE c.project_id = ${projectId} AND (${audience}) ${subscribed} AND sup.email IS NULL`.execute(db);
  return Number(rows[0]?.n ?? 0);
}

/**
 * POST /campaigns/audience-count: how many emails a campaign with this audience would queue if
 * sent now (as countCampaignRecipients counts a saved one), for the composer's live count. The
 * audience is checked as on create (422 naming the field); a segment that cannot be evaluated
 * (a DYNAMIC one without a condition) is a 422 on `segmentId`.
 */
export async function countAudience(db: Kysely<Database>, projectId: string, input: AudienceInput & { type: EmailType }): Promise<number> {
  const a = await resolveAudience(db, projectId, input);
  let audience: RawBuilder<SqlBool>;
  try {
    audience = await audienceSql(db, { project_id: projectId, audience_type: a.audienceType, segment_id: a.segmentId, audience_condition: a.audienceCondition });
  } catch (err) {
    if (err instanceof AudienceUnusableError) throw validationError([{ field: 'segmentId', message: err.message, code: 'invalid_string' }]);
    throw err;
  }
  return countRecipients(db, projectId, audience, input.type === 'MARKETING');
}
