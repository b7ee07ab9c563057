import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDeps } from '../../../src/app-deps.js';
import { TokenPurpose } from '../../../src/mail/compliance.js';
import { compactRollups } from '../../../src/modules/analytics/index.js';
import { deleteProjectData } from '../../../src/modules/projects/lifecycle.repo.js';
import type { CampaignBounceList, CampaignLinks, CampaignTimeseries } from '../../../src/modules/campaigns/campaigns.schema.js';
import { webhooksRoutes } from '../../../src/modules/webhooks/webhooks.routes.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp, testConfig } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { getWithKey, ok, seedCampaign, seedEmails } from '../analytics/helpers.js';
import { seedContact } from '../tracking/fixtures.js';
import { sesEvent, TOPIC_ARN } from '../webhooks/sns-signer.js';

/**
 * The campaign page's insight routes (docs/campaigns.md "Insight"): opens and clicks over time,
 * top links, bounces. Opens, clicks and notifications go through the real routes.
 */

let t: TestApp;
let project: TestProject;
let other: TestProject;
beforeAll(async () => {
  t = await createTestApp({
    // The SNS notification route without signature checks (its signing is tested in test/modules/webhooks).
    extend: (app, db) => {
      const deps = createAppDeps(testConfig(), db.db);
      void app.register(webhooksRoutes, {
        ...deps,
        prefix: '/unsigned',
        sns: { fetchCertificate: async () => '', confirmSubscription: async () => undefined, verify: false },
      });
    },
  });
  ({ project } = await newProject(t.app));
  ({ project: other } = await newProject(t.app));
});
afterAll(() => t.close());

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36';
const APPLE_MPP = 'Mozilla/5.0';

const open = (emailId: string, userAgent: string) =>
  t.app.inject({ method: 'GET', url: `/t/o/${t.deps.tokens.sign(TokenPurpose.open, { e: emailId })}`, headers: { 'user-agent': userAgent } });
async function click(emailId: string, u: string) {
  const res = await t.app.inject({ method: 'GET', url: `/t/c/${t.deps.tokens.sign(TokenPurpose.click, { e: emailId, u })}`, headers: { 'user-agent': CHROME } });
  expect(res.statusCode).toBe(302);
  expect(res.headers.location).toBe(u);
}
async function notify(kind: 'Bounce' | 'Complaint' | 'Delivery', emailId: string) {
  const { message_id: messageId } = await t.db.db.selectFrom('emails').select('message_id').where('id', '=', emailId).executeTakeFirstOrThrow();
  const res = await t.app.inject({
    method: 'POST',
    url: '/unsigned/webhooks/notifications',
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': 'Notification' },
    payload: JSON.stringify({ Type: 'Notification', MessageId: randomUUID(), TopicArn: TOPIC_ARN, Timestamp: new Date().toISOString(), Message: JSON.stringify(sesEvent(kind, { messageId })) }),
  });
  expect(res.statusCode, res.body).toBe(200);
}

/** `n` SENT campaign emails, each to a new contact. */
async function campaignEmails(p: TestProject, campaignId: string, n: number, sent: string | Date = new Date()) {
  const contacts: string[] = [];
  for (let i = 0; i < n; i++) contacts.push(await seedContact(t.db, p.id));
  const ids = await seedEmails(t.db, p.id, contacts.map((contactId) => ({ sent, campaignId, contactId })));
  return ids.map((id, i) => ({ id, contactId: contacts[i] ?? '' }));
}

const series = (campaignId: string, query: string, p = project) => ok<CampaignTimeseries>(t, p.secret, `/campaigns/${campaignId}/stats/timeseries?${query}`);
const total = (s: CampaignTimeseries, k: 'delivered' | 'opened' | 'clicked' | 'bounced' | 'complained') => s.data.reduce((a, d) => a + d[k], 0);

/** The rollup of one campaign, shards summed, against COUNTs over its email rows (same buckets). */
async function expectRollupMatchesRows(campaignId: string) {
  const { rows: direct } = await sql<Record<string, unknown>>`
    SELECT bucket, sum(d)::int AS delivered, sum(o)::int AS opened, sum(c)::int AS clicked, sum(b)::int AS bounced, sum(x)::int AS complained
    FROM (
      SELECT analytics_bucket(delivered_at) AS bucket, 1 AS d, 0 AS o, 0 AS c, 0 AS b, 0 AS x FROM emails WHERE campaign_id = ${campaignId} AND delivered_at IS NOT NULL
      UNION ALL SELECT analytics_bucket(analytics_human_opened_at(opened_at, human_opened_at)), 0, 1, 0, 0, 0 FROM emails
        WHERE campaign_id = ${campaignId} AND analytics_human_opened_at(opened_at, human_opened_at) IS NOT NULL
      UNION ALL SELECT analytics_bucket(clicked_at), 0, 0, 1, 0, 0 FROM emails WHERE campaign_id = ${campaignId} AND clicked_at IS NOT NULL
      UNION ALL SELECT analytics_bucket(bounced_at), 0, 0, 0, 1, 0 FROM emails WHERE campaign_id = ${campaignId} AND bounced_at IS NOT NULL
      UNION ALL SELECT analytics_bucket(complained_at), 0, 0, 0, 0, 1 FROM emails WHERE campaign_id = ${campaignId} AND complained_at IS NOT NULL
    ) r GROUP BY bucket ORDER BY bucket`.execute(t.db.db);
  const { rows: rollup } = await sql<Record<string, unknown>>`
    SELECT * FROM (
      SELECT bucket, sum(delivered)::int AS delivered, sum(opened)::int AS opened, sum(clicked)::int AS clicked, sum(bounced)::int AS bounced,
             sum(complained)::int AS complained
      FROM campaign_email_counts WHERE campaign_id = ${campaignId} GROUP BY bucket
    ) s WHERE delivered <> 0 OR opened <> 0 OR clicked <> 0 OR bounced <> 0 OR complained <> 0 ORDER BY bucket`.execute(t.db.db);
  expect(rollup).toEqual(direct);
}

describe('counts after real deliveries, opens, clicks and notifications', () => {
  it('timeseries: unique per email, machine opens excluded, a click implies an open; top links count every click', async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Links' });
    const [a, b, c, d] = await campaignEmails(project, campaignId, 4);
    if (!a || !b || !c || !d) throw new Error('no emails');
    for (const e of [a, b, c]) await notify('Delivery', e.id);
    await notify('Delivery', a.id); // a repeated notification counts once
    // a: a person opens twice; b: only a machine (Apple MPP) opens; c and d: clicks, no pixel.
    expect((await open(a.id, CHROME)).statusCode).toBe(200);
    expect((await open(a.id, CHROME)).statusCode).toBe(200);
    expect((await open(b.id, APPLE_MPP)).statusCode).toBe(200);
    await click(c.id, 'https://shop.example/a');
    await click(c.id, 'https://shop.example/a');
    await click(c.id, 'https://shop.example/b?x=1');
    await click(d.id, 'https://shop.example/a');
    await notify('Bounce', b.id);
    await notify('Complaint', a.id);

    const s = await series(campaignId, 'interval=hour');
    expect({ delivered: total(s, 'delivered'), opened: total(s, 'opened'), clicked: total(s, 'clicked'), bounced: total(s, 'bounced'), complained: total(s, 'complained') })
      .toEqual({ delivered: 3, opened: 3, clicked: 2, bounced: 1, complained: 1 });
    expect(s.data.length).toBeGreaterThanOrEqual(1);
    expect(s.data.every((p) => !('sent' in p))).toBe(true);
    await expectRollupMatchesRows(campaignId);

    const links = await ok<CampaignLinks>(t, project.secret, `/campaigns/${campaignId}/links`);
    expect(links).toEqual({
      data: [
        { url: 'https://shop.example/a', clicks: 3, uniqueClicks: 2 },
        { url: 'https://shop.example/b?x=1', clicks: 1, uniqueClicks: 1 },
      ],
      clickedEmails: 2,
    });
    expect((await ok<CampaignLinks>(t, project.secret, `/campaigns/${campaignId}/links?limit=1`)).data).toHaveLength(1);
    const perEmail = await sql<{ url: string; clicks: number }>`
      SELECT url, clicks FROM email_link_clicks WHERE email_id = ${c.id} ORDER BY url`.execute(t.db.db);
    expect(perEmail.rows).toEqual([{ url: 'https://shop.example/a', clicks: 2 }, { url: 'https://shop.example/b?x=1', clicks: 1 }]);
  });

  it("a transactional email's clicks are kept per URL but are no campaign's links", async () => {
    const contactId = await seedContact(t.db, project.id);
    const [emailId] = await seedEmails(t.db, project.id, [{ sent: new Date(), contactId }]);
    if (!emailId) throw new Error('no email');
    await click(emailId, 'https://docs.example/');
    await click(emailId, 'https://docs.example/');
    const rows = await sql<{ clicks: number }>`SELECT clicks FROM email_link_clicks WHERE email_id = ${emailId}`.execute(t.db.db);
    expect(rows.rows).toEqual([{ clicks: 2 }]);
    const { rows: counts } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM campaign_link_counts WHERE url = 'https://docs.example/'`.execute(t.db.db);
    expect(counts[0]?.n).toBe(0);
  });
});

describe('GET /campaigns/:id/stats/timeseries', () => {
  it('buckets by local day and hour of tz, zero-fills gaps, and follows moved milestones', async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Zones' });
    await sql`UPDATE campaigns SET started_at = '2026-03-01T17:00:00Z', sent_at = '2026-03-01T23:00:00Z' WHERE id = ${campaignId}`.execute(t.db.db);
    // Kolkata is UTC+5:30: 18:00Z is 23:30 on March 1st there, 19:00Z already 00:30 on March 2nd.
    const ids = await seedEmails(t.db, project.id, [
      { campaignId, sent: '2026-03-01T17:00:00Z', delivered: '2026-03-01T18:00:00Z', humanOpened: '2026-03-03T20:10:00Z' },
      { campaignId, sent: '2026-03-01T17:00:00Z', delivered: '2026-03-01T19:00:00Z', clicked: '2026-03-04T01:00:00Z', humanOpened: '2026-03-04T01:00:00Z' },
    ]);
    const utc = await series(campaignId, 'interval=day&tz=UTC&startDate=2026-03-01&endDate=2026-03-05');
    expect(utc.data).toEqual([
      { date: '2026-03-01', delivered: 2, opened: 0, clicked: 0, bounced: 0, complained: 0 },
      { date: '2026-03-02', delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 },
      { date: '2026-03-03', delivered: 0, opened: 1, clicked: 0, bounced: 0, complained: 0 },
      { date: '2026-03-04', delivered: 0, opened: 1, clicked: 1, bounced: 0, complained: 0 },
      { date: '2026-03-05', delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 },
    ]);
    const kolkata = await series(campaignId, 'interval=day&tz=Asia/Kolkata&startDate=2026-03-01&endDate=2026-03-04');
    expect(kolkata.startDate).toBe('2026-02-28T18:30:00.000Z');
    expect(kolkata.data.map((p) => [p.date, p.delivered, p.opened, p.clicked])).toEqual([
      ['2026-03-01', 1, 0, 0],
      ['2026-03-02', 1, 0, 0],
      ['2026-03-03', 0, 0, 0],
      ['2026-03-04', 0, 2, 1], // 20:10Z on the 3rd is 01:40 on the 4th in Kolkata
    ]);
    const hours = await series(campaignId, 'interval=hour&tz=Asia/Kolkata&startDate=2026-03-01T17:30:00Z&endDate=2026-03-01T20:30:00Z');
    // Kolkata's hours start at :30 UTC: 18:00Z is in 23:00–24:00 local, 19:00Z in 00:00–01:00.
    expect(hours.data.map((p) => [p.date, p.delivered])).toEqual([
      ['2026-03-01T17:30:00.000Z', 1],
      ['2026-03-01T18:30:00.000Z', 1],
      ['2026-03-01T19:30:00.000Z', 0],
    ]);

    // Default range: from the campaign's start of sending (17:00Z, not its end), one point per hour, at most 366 days.
    const byDefault = await series(campaignId, 'interval=hour');
    expect(byDefault.data[0]?.date).toBe('2026-03-01T17:00:00.000Z');
    expect(byDefault.data[1]).toMatchObject({ date: '2026-03-01T18:00:00.000Z', delivered: 1 });
    const hoursSince = Math.floor((Date.now() - Date.parse('2026-03-01T17:00:00Z')) / 3_600_000) + 1;
    expect(byDefault.data.length).toBe(Math.min(hoursSince, 366 * 24));

    // A milestone moved (not newly set): the old bucket loses it, the new one gains it.
    await sql`UPDATE emails SET delivered_at = '2026-03-02T12:00:00Z' WHERE id = ${ids[0] ?? ''}`.execute(t.db.db);
    const moved = await series(campaignId, 'interval=day&tz=UTC&startDate=2026-03-01&endDate=2026-03-02');
    expect(moved.data.map((p) => p.delivered)).toEqual([1, 1]);
    await expectRollupMatchesRows(campaignId);

    // Compaction folds the writers' shards into shard 0 and changes no answer.
    await compactRollups(t.db.db);
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM campaign_email_counts WHERE campaign_id = ${campaignId} AND shard <> 0`.execute(t.db.db);
    expect(rows[0]?.n).toBe(0);
    expect(await series(campaignId, 'interval=day&tz=UTC&startDate=2026-03-01&endDate=2026-03-05')).toEqual({
      ...utc,
      data: utc.data.map((p) => (p.date === '2026-03-01' ? { ...p, delivered: 1 } : p.date === '2026-03-02' ? { ...p, delivered: 1 } : p)),
    });
  });

  it('a campaign never sent has no points unless a range is given', async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Draft', status: 'DRAFT' });
    expect((await series(campaignId, 'interval=day')).data).toEqual([]);
    expect((await series(campaignId, 'interval=day&startDate=2026-01-01&endDate=2026-01-03')).data.map((p) => p.date)).toEqual(['2026-01-01', '2026-01-02', '2026-01-03']);
  });

  it('422 on bad parameters', async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Bad' });
    for (const [query, field] of [
      ['interval=week', 'interval'],
      ['tz=Mars/Olympus', 'tz'],
      ['startDate=2026-02-30', 'startDate'],
      ['startDate=2026-03-05&endDate=2026-03-01', 'endDate'],
      ['startDate=2024-01-01&endDate=2026-01-01', 'endDate'],
    ] as const) {
      const res = await getWithKey(t, project.secret, `/campaigns/${campaignId}/stats/timeseries?${query}`);
      const error = expectEnvelope(res, 422, 'VALIDATION_ERROR') as { errors: { field: string }[] };
      expect(error.errors.map((e) => e.field), query).toContain(field);
    }
    for (const query of ['limit=0', 'limit=abc']) {
      expect((await getWithKey(t, project.secret, `/campaigns/${campaignId}/links?${query}`)).statusCode, query).toBe(422);
      expect((await getWithKey(t, project.secret, `/campaigns/${campaignId}/bounces?${query}`)).statusCode, query).toBe(422);
    }
    const badCursor = await getWithKey(t, project.secret, `/campaigns/${campaignId}/bounces?cursor=nonsense`);
    expect((expectEnvelope(badCursor, 422, 'VALIDATION_ERROR') as { errors: { field: string }[] }).errors[0]?.field).toBe('cursor');
  });
});

describe('GET /campaigns/:id/bounces', () => {
  it('pages bounced and complained emails newest first, with their contact and the notification', async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Bounces' });
    const emails = await campaignEmails(project, campaignId, 7);
    // Five at known times (two at the same instant, across a page boundary: the id breaks the tie), one through SNS, one not bounced.
    const times = ['2026-03-01T10:00:00.000001Z', '2026-03-01T11:00:00Z', '2026-03-01T11:00:00Z', '2026-03-01T12:00:00Z', '2026-03-01T09:00:00Z'];
    for (const [i, at] of times.entries()) {
      const column = i === 3 ? 'complained_at' : 'bounced_at';
      await sql`UPDATE emails SET ${sql.ref(column)} = ${at}, status = ${i === 3 ? 'COMPLAINED' : 'BOUNCED'} WHERE id = ${emails[i]?.id ?? ''}`.execute(t.db.db);
    }
    const viaSns = emails[5];
    if (!viaSns) throw new Error('no email');
    await notify('Bounce', viaSns.id);

    const seen: CampaignBounceList['data'] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: CampaignBounceList = await ok<CampaignBounceList>(t, project.secret, `/campaigns/${campaignId}/bounces?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.total).toBe(pages === 0 ? 6 : 0);
      expect(page.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.data);
      cursor = page.cursor;
      expect(page.hasMore).toBe(cursor !== null);
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(seen).toHaveLength(6);
    expect(new Set(seen.map((b) => b.emailId)).size).toBe(6);
    const tied = [emails[1]?.id ?? '', emails[2]?.id ?? ''].sort().reverse();
    expect(seen.map((b) => b.emailId)).toEqual([viaSns.id, emails[3]?.id, ...tied, emails[0]?.id, emails[4]?.id]);
    expect(seen[0]).toMatchObject({
      status: 'BOUNCED',
      contact: { id: viaSns.contactId, email: expect.stringContaining('@') },
      bounceType: 'Permanent',
      bounceSubType: 'General',
      reason: 'smtp; 550 5.1.1 user unknown',
    });
    expect(seen[1]).toMatchObject({ status: 'COMPLAINED', at: '2026-03-01T12:00:00.000Z', bounceType: null });
    expect(seen[4]?.at).toBe('2026-03-01T10:00:00.000Z');
  });
});

describe('scoping', () => {
  it("another project's campaign, an unknown id and a malformed id are 404 on every insight route", async () => {
    const campaignId = await seedCampaign(t.db, project.id, { name: 'Mine' });
    for (const path of ['stats/timeseries', 'links', 'bounces']) {
      expect((await getWithKey(t, project.secret, `/campaigns/${campaignId}/${path}`)).statusCode, path).toBe(200);
      for (const url of [`/campaigns/${campaignId}/${path}`, `/campaigns/0190a8f0-0000-7000-8000-000000000000/${path}`, `/campaigns/nope/${path}`]) {
        const res = await getWithKey(t, other.secret, url);
        expectEnvelope(res, 404, 'NOT_FOUND');
      }
    }
  });
});

describe('project reset', () => {
  it("wipes the insight tables of the project (on the fast path) and nothing of another project's", async () => {
    const { project: doomed } = await newProject(t.app);
    const counts = async (projectId: string) => {
      const { rows } = await sql<{ n: number }>`
        SELECT (SELECT count(*) FROM campaign_email_counts WHERE project_id = ${projectId})
             + (SELECT count(*) FROM campaign_link_counts WHERE project_id = ${projectId})
             + (SELECT count(*) FROM email_link_clicks WHERE project_id = ${projectId}) AS n`.execute(t.db.db);
      return Number(rows[0]?.n ?? 0);
    };
    for (const p of [doomed, other]) {
      const campaignId = await seedCampaign(t.db, p.id, { name: 'Reset' });
      const [email] = await campaignEmails(p, campaignId, 1);
      await click(email?.id ?? '', 'https://reset.example/');
      expect(await counts(p.id)).toBe(3);
    }
    const { skippedTriggers } = await t.db.db.transaction().execute((trx) => deleteProjectData(trx, doomed.id));
    expect(skippedTriggers).toBe(true);
    expect(await counts(doomed.id)).toBe(0);
    expect(await counts(other.id)).toBe(3);
  });
});
