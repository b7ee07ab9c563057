import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../../src/db/connection.js';
import { bearer } from '../../helpers/accounts.js';
import type { TestApp } from '../../helpers/app.js';

/** Milestone times of a seeded email (ISO strings or Dates); absent = not reached. */
export interface Milestones {
  sent?: string | Date;
  delivered?: string | Date;
  opened?: string | Date;
  humanOpened?: string | Date;
  clicked?: string | Date;
  bounced?: string | Date;
  complained?: string | Date;
}

const at = (v: string | Date | undefined) => (v === undefined ? null : new Date(v));

/**
 * Emails inserted straight into the table with their milestones at known times (one INSERT: the
 * statement trigger counts them). Status SENT (or what the milestones say); no contact unless given.
 */
export async function seedEmails(
  db: Db,
  projectId: string,
  emails: readonly (Milestones & { campaignId?: string; contactId?: string })[],
): Promise<string[]> {
  if (emails.length === 0) return [];
  const rows = await db.db
    .insertInto('emails')
    .values(
      emails.map((m) => ({
        project_id: projectId,
        contact_id: m.contactId ?? null,
        campaign_id: m.campaignId ?? null,
        source: m.campaignId ? ('CAMPAIGN' as const) : ('SEND' as const),
        type: 'MARKETING' as const,
        to_email: 'rcpt@example.com',
        from_email: 'news@sender.example',
        subject: 'Hello',
        html: '<p>Hello</p>',
        status: m.sent ? ('SENT' as const) : ('PENDING' as const),
        message_id: `<${randomUUID()}@analytics.test>`,
        sent_at: at(m.sent),
        delivered_at: at(m.delivered),
        opened_at: at(m.opened ?? m.humanOpened),
        human_opened_at: at(m.humanOpened),
        clicked_at: at(m.clicked),
        bounced_at: at(m.bounced),
        complained_at: at(m.complained),
      })),
    )
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/** A campaign row (inserted directly) in `status`. */
export async function seedCampaign(db: Db, projectId: string, opts: { name: string; subject?: string; status?: string }): Promise<string> {
  const { rows } = await sql<{ id: string }>`
    INSERT INTO campaigns (project_id, name, subject, body, from_email, status, sent_at)
    VALUES (${projectId}, ${opts.name}, ${opts.subject ?? `${opts.name} subject`}, '<p>Hi</p>', 'news@sender.example',
            ${opts.status ?? 'SENT'}, ${opts.status === 'SENT' || opts.status === undefined ? sql`now()` : null})
    RETURNING id`.execute(db.db);
  const id = rows[0]?.id;
  if (!id) throw new Error('no campaign');
  return id;
}

/** A contact and `names` events of it at the given times (one INSERT: the statement trigger counts them). */
export async function seedEvents(db: Db, projectId: string, events: readonly { name: string; at: string | Date }[], contactId?: string): Promise<string> {
  const contact =
    contactId ??
    (await db.db.insertInto('contacts').values({ project_id: projectId, email: `ev-${randomUUID()}@example.com`, subscribed: true }).returning('id').executeTakeFirstOrThrow()).id;
  if (events.length > 0) {
    await db.db
      .insertInto('events')
      .values(events.map((e) => ({ project_id: projectId, contact_id: contact, name: e.name, created_at: new Date(e.at) })))
      .execute();
  }
  return contact;
}

/** GET an analytics route with the project's secret key; returns the response. */
export function getWithKey(t: TestApp, secret: string, url: string) {
  return t.app.inject({ method: 'GET', url, headers: bearer(secret) });
}

/** The body of a 200 answer (fails the test with the body otherwise). */
export async function ok<T = Record<string, unknown>>(t: TestApp, secret: string, url: string): Promise<T> {
  const res = await getWithKey(t, secret, url);
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json<T>();
}

/**
 * Direct COUNTs over the project's emails and tracked events, to compare with the rollups: per
 * 15-minute bucket and column (emails), per name (events), per campaign.
 */
export async function directCounts(db: Db, projectId: string) {
  const emails = await sql<Record<string, unknown>>`
    SELECT r.bucket, sum(r.sent)::int AS sent, sum(r.delivered)::int AS delivered, sum(r.opened)::int AS opened,
           sum(r.opened_any)::int AS opened_any, sum(r.clicked)::int AS clicked, sum(r.bounced)::int AS bounced,
           sum(r.complained)::int AS complained, sum(r.sent_delivered)::int AS sent_delivered, sum(r.sent_opened)::int AS sent_opened,
           sum(r.sent_clicked)::int AS sent_clicked, sum(r.sent_bounced)::int AS sent_bounced, sum(r.sent_complained)::int AS sent_complained
    FROM (
      SELECT date_bin('15 minutes', sent_at, '2000-01-01Z') AS bucket, 1 AS sent, 0 AS delivered, 0 AS opened, 0 AS opened_any, 0 AS clicked,
             0 AS bounced, 0 AS complained, (delivered_at IS NOT NULL)::int AS sent_delivered,
             (analytics_human_opened_at(opened_at, human_opened_at) IS NOT NULL)::int AS sent_opened,
             (clicked_at IS NOT NULL)::int AS sent_clicked, (bounced_at IS NOT NULL)::int AS sent_bounced,
             (complained_at IS NOT NULL)::int AS sent_complained
      FROM emails WHERE project_id = ${projectId} AND sent_at IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', delivered_at, '2000-01-01Z'), 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM emails WHERE project_id = ${projectId} AND delivered_at IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', analytics_human_opened_at(opened_at, human_opened_at), '2000-01-01Z'), 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0
                FROM emails WHERE project_id = ${projectId} AND analytics_human_opened_at(opened_at, human_opened_at) IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', opened_at, '2000-01-01Z'), 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 FROM emails WHERE project_id = ${projectId} AND opened_at IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', clicked_at, '2000-01-01Z'), 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0 FROM emails WHERE project_id = ${projectId} AND clicked_at IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', bounced_at, '2000-01-01Z'), 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0 FROM emails WHERE project_id = ${projectId} AND bounced_at IS NOT NULL
      UNION ALL SELECT date_bin('15 minutes', complained_at, '2000-01-01Z'), 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0 FROM emails WHERE project_id = ${projectId} AND complained_at IS NOT NULL
    ) r GROUP BY r.bucket ORDER BY r.bucket`.execute(db.db);
  const campaigns = await sql<Record<string, unknown>>`
    SELECT campaign_id, count(sent_at)::int AS sent, count(delivered_at)::int AS delivered,
           count(analytics_human_opened_at(opened_at, human_opened_at))::int AS opened, count(clicked_at)::int AS clicked,
           count(bounced_at)::int AS bounced, count(complained_at)::int AS complained
    FROM emails WHERE project_id = ${projectId} AND campaign_id IS NOT NULL
    GROUP BY campaign_id HAVING count(sent_at) + count(delivered_at) + count(opened_at) + count(clicked_at) + count(bounced_at) + count(complained_at) > 0
    ORDER BY campaign_id`.execute(db.db);
  const events = await sql<Record<string, unknown>>`
    SELECT date_bin('15 minutes', created_at, '2000-01-01Z') AS bucket, name, count(*)::int AS count
    FROM events WHERE project_id = ${projectId} AND NOT analytics_is_system_event(name)
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(db.db);
  const days = await sql<Record<string, unknown>>`
    SELECT to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, name, count(*)::int AS count
    FROM events WHERE project_id = ${projectId} AND NOT analytics_is_system_event(name)
    GROUP BY 1, 2 ORDER BY 1, 2`.execute(db.db);
  return { emails: emails.rows, campaigns: campaigns.rows, events: events.rows, days: days.rows };
}

/** The rollups of the project, shards summed, rows that sum to zero left out: comparable with {@link directCounts}. */
export async function rollupCounts(db: Db, projectId: string) {
  const emails = await sql<Record<string, unknown>>`
    SELECT * FROM (
      SELECT bucket, sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(opened)::int AS opened, sum(opened_any)::int AS opened_any,
             sum(clicked)::int AS clicked, sum(bounced)::int AS bounced, sum(complained)::int AS complained,
             sum(sent_delivered)::int AS sent_delivered, sum(sent_opened)::int AS sent_opened, sum(sent_clicked)::int AS sent_clicked,
             sum(sent_bounced)::int AS sent_bounced, sum(sent_complained)::int AS sent_complained
      FROM analytics_email_counts WHERE project_id = ${projectId} GROUP BY bucket
    ) s
    WHERE sent <> 0 OR delivered <> 0 OR opened <> 0 OR opened_any <> 0 OR clicked <> 0 OR bounced <> 0 OR complained <> 0
       OR sent_delivered <> 0 OR sent_opened <> 0 OR sent_clicked <> 0 OR sent_bounced <> 0 OR sent_complained <> 0
    ORDER BY bucket`.execute(db.db);
  const campaigns = await sql<Record<string, unknown>>`
    SELECT * FROM (
      SELECT campaign_id, sum(sent)::int AS sent, sum(delivered)::int AS delivered, sum(opened)::int AS opened, sum(clicked)::int AS clicked,
             sum(bounced)::int AS bounced, sum(complained)::int AS complained
      FROM analytics_campaign_counts WHERE project_id = ${projectId} GROUP BY campaign_id
    ) s WHERE sent <> 0 OR delivered <> 0 OR opened <> 0 OR clicked <> 0 OR bounced <> 0 OR complained <> 0
    ORDER BY campaign_id`.execute(db.db);
  const events = await sql<Record<string, unknown>>`
    SELECT bucket, name, sum(count)::int AS count FROM analytics_event_counts WHERE project_id = ${projectId}
    GROUP BY 1, 2 HAVING sum(count) <> 0 ORDER BY 1, 2`.execute(db.db);
  const days = await sql<Record<string, unknown>>`
    SELECT to_char(day, 'YYYY-MM-DD') AS day, name, sum(count)::int AS count FROM analytics_event_daily WHERE project_id = ${projectId}
    GROUP BY 1, 2 HAVING sum(count) <> 0 ORDER BY 1, 2`.execute(db.db);
  return { emails: emails.rows, campaigns: campaigns.rows, events: events.rows, days: days.rows };
}
