import { type Kysely, sql } from 'kysely';
import type { Database } from '../../db/schema.js';

/**
 * The campaign page's bounce list (docs/campaigns.md "Insight"): a campaign's BOUNCED and
 * COMPLAINED emails newest first, read along emails_campaign_feedback_idx (migration 0031:
 * partial, only those rows; key project_id, campaign_id, coalesce(complained_at, bounced_at) DESC, id DESC).
 */

/** Where a page ends: the feedback time with microseconds (a Date keeps only milliseconds) and the email id. */
export interface FeedbackPosition {
  at: string;
  id: string;
}

export interface FeedbackRow {
  id: string;
  status: 'BOUNCED' | 'COMPLAINED';
  to_email: string;
  contact_id: string | null;
  contact_email: string | null;
  at: Date;
  bounced_at: Date | null;
  complained_at: Date | null;
  /** The notification's data on the email.bounce / email.complaint event, when the contact still has it. */
  bounce: Record<string, unknown> | null;
  complaint: Record<string, unknown> | null;
  position_at: string;
}

const UTC_MICROS = `YYYY-MM-DD"T"HH24:MI:SS.US"Z"`;
const AT = sql`coalesce(e.complained_at, e.bounced_at)`;

/**
 * One page after `after`. The page is taken from the index first (`LIMIT`), then each of its
 * emails gets its contact (primary key) and its notification event: the contact's email.bounce
 * (email.complaint) event of that email, recorded in the milestone's transaction, so at exactly
 * bounced_at (complained_at) — events_contact_created_idx finds it in one probe.
 */
export async function listCampaignFeedback(
  db: Kysely<Database>,
  input: { projectId: string; campaignId: string; limit: number; after?: FeedbackPosition | undefined },
): Promise<FeedbackRow[]> {
  const p = sql`${input.projectId}::uuid`;
  const after = input.after
    ? sql`AND ${AT} <= ${input.after.at}::timestamptz AND (${AT}, e.id) < (${input.after.at}::timestamptz, ${input.after.id}::uuid)`
    : sql``;
  const event = (name: string, at: ReturnType<typeof sql>) => sql`(
      SELECT ev.data FROM events ev
      WHERE ev.contact_id = pg.contact_id AND ev.created_at = ${at} AND ev.project_id = ${p}
        AND ev.name = ${name} AND ev.data ->> 'emailId' = pg.id::text
      LIMIT 1)`;
  const { rows } = await sql<FeedbackRow>`
    WITH page AS MATERIALIZED (
      SELECT e.id, e.status, e.to_email, e.contact_id, e.bounced_at, e.complained_at, ${AT} AS at
      FROM emails e
      WHERE e.campaign_id = ${input.campaignId}::uuid AND e.status IN ('BOUNCED', 'COMPLAINED') AND e.project_id = ${p} ${after}
      ORDER BY ${AT} DESC, e.id DESC
      LIMIT ${input.limit}
    )
    SELECT pg.id, pg.status, pg.to_email, c.id AS contact_id, c.email AS contact_email, pg.at, pg.bounced_at, pg.complained_at,
           CASE WHEN pg.bounced_at IS NOT NULL THEN ${event('email.bounce', sql`pg.bounced_at`)} END AS bounce,
           CASE WHEN pg.complained_at IS NOT NULL THEN ${event('email.complaint', sql`pg.complained_at`)} END AS complaint,
           to_char(pg.at AT TIME ZONE 'UTC', ${UTC_MICROS}) AS position_at
    FROM page pg
    LEFT JOIN contacts c ON c.id = pg.contact_id AND c.project_id = ${p}
    ORDER BY pg.at DESC, pg.id DESC`.execute(db);
  return rows;
}

/** How many bounced or complained emails the campaign has (an index-only count on the same index). */
export async function countCampaignFeedback(db: Kysely<Database>, projectId: string, campaignId: string): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM emails e
    WHERE e.campaign_id = ${campaignId}::uuid AND e.status IN ('BOUNCED', 'COMPLAINED') AND e.project_id = ${projectId}::uuid`.execute(db);
  return rows[0]?.n ?? 0;
}
