import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { directCounts, getWithKey, ok, rollupCounts, seedCampaign, seedEmails, seedEvents } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** `n` emails of a campaign: the first `opened` opened (by a person), the first `clicked` clicked. */
async function campaignEmails(projectId: string, campaignId: string, n: number, opened: number, clicked: number) {
  await seedEmails(
    t.db,
    projectId,
    Array.from({ length: n }, (_, i) => ({
      campaignId,
      sent: '2025-06-01T10:00:00Z',
      ...(i < opened && { humanOpened: '2025-06-01T11:00:00Z' }),
      ...(i < clicked && { clicked: '2025-06-01T11:01:00Z' }),
    })),
  );
}

interface TopCampaign {
  id: string;
  name: string;
  subject: string;
  sentCount: number;
  openedCount: number;
  clickedCount: number;
  openRate: number;
  clickRate: number;
}

describe('GET /analytics/top-campaigns and /analytics/campaign-stats', () => {
  let project: TestProject;
  const ids: Record<string, string> = {};
  const id = (name: string) => {
    const found = ids[name];
    if (!found) throw new Error(`no campaign ${name}`);
    return found;
  };
  beforeAll(async () => {
    ({ project } = await newProject(t.app));
    for (const [name, status] of [
      ['A', 'SENT'], ['B', 'SENT'], ['C', 'SENT'], ['D', 'DRAFT'], ['E', 'SCHEDULED'], ['F', 'SENDING'], ['G', 'CANCELLED'],
    ] as const) {
      ids[name] = await seedCampaign(t.db, project.id, { name, status });
    }
    await campaignEmails(project.id, id('A'), 10, 5, 1);
    await campaignEmails(project.id, id('B'), 4, 4, 3);
    await campaignEmails(project.id, id('C'), 20, 2, 2);
    await campaignEmails(project.id, id('F'), 2, 0, 0);
    // Opened only by a machine (opened_at after 0029 without human_opened_at): not an open of C.
    await seedEmails(t.db, project.id, [{ campaignId: id('C'), sent: '2025-06-01T10:00:00Z', opened: new Date() }]);
    await seedEmails(t.db, project.id, [{ campaignId: id('G'), sent: undefined }]); // cancelled before sending: nothing sent
    // Another project's campaign with more of everything.
    const other = await newProject(t.app);
    const otherCampaign = await seedCampaign(t.db, other.project.id, { name: 'Other' });
    await campaignEmails(other.project.id, otherCampaign, 50, 50, 50);
  });

  const top = (query: string) => ok<{ data: TopCampaign[] }>(t, project.secret, `/analytics/top-campaigns?${query}`);

  it('orders the campaigns that sent email by opens (the default), clicks or emails sent', async () => {
    const byOpens = await top('');
    expect(byOpens.data.map((c) => c.name)).toEqual(['A', 'B', 'C', 'F']);
    expect(byOpens.data[0]).toEqual({
      id: ids.A,
      name: 'A',
      subject: 'A subject',
      status: 'SENT',
      sentAt: expect.any(String),
      sentCount: 10,
      openedCount: 5,
      clickedCount: 1,
      openRate: 0.5,
      clickRate: 0.1,
    });
    expect(byOpens.data.find((c) => c.name === 'C')).toMatchObject({ sentCount: 21, openedCount: 2, openRate: 0.0952 });
    expect((await top('metric=clicks')).data.map((c) => c.name)).toEqual(['B', 'C', 'A', 'F']);
    expect((await top('metric=sent')).data.map((c) => c.name)).toEqual(['C', 'A', 'B', 'F']);
    expect((await top('metric=sent&limit=2')).data.map((c) => c.name)).toEqual(['C', 'A']);
    expect((await top('limit=500')).data).toHaveLength(4); // clamped to 50
    expectEnvelope(await getWithKey(t, project.secret, '/analytics/top-campaigns?metric=bounces'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await getWithKey(t, project.secret, '/analytics/top-campaigns?limit=0'), 422, 'VALIDATION_ERROR');
  });

  it('a deleted campaign leaves the list with its counts', async () => {
    const { project: p } = await newProject(t.app);
    const gone = await seedCampaign(t.db, p.id, { name: 'Gone' });
    await campaignEmails(p.id, gone, 3, 1, 0);
    expect((await ok<{ data: TopCampaign[] }>(t, p.secret, '/analytics/top-campaigns')).data).toHaveLength(1);
    await t.db.db.deleteFrom('campaigns').where('id', '=', gone).execute();
    expect((await ok<{ data: TopCampaign[] }>(t, p.secret, '/analytics/top-campaigns')).data).toEqual([]);
    expect(await t.db.db.selectFrom('analytics_campaign_counts').select('campaign_id').where('campaign_id', '=', gone).execute()).toEqual([]);
  });

  it('campaign-stats: campaigns per state and the mean rates of those that sent', async () => {
    const stats = await ok(t, project.secret, '/analytics/campaign-stats');
    // Rates of A, B, C, F: opens 0.5, 1, 2/21, 0; clicks 0.1, 0.75, 2/21, 0.
    expect(stats).toEqual({
      total: 7,
      active: 2,
      completed: 3,
      byStatus: { DRAFT: 1, SCHEDULED: 1, SENDING: 1, SENT: 3, CANCELLED: 1 },
      averageOpenRate: Math.round(((0.5 + 1 + 2 / 21 + 0) / 4) * 10_000) / 10_000,
      averageClickRate: Math.round(((0.1 + 0.75 + 2 / 21 + 0) / 4) * 10_000) / 10_000,
    });
    const { project: empty } = await newProject(t.app);
    expect(await ok(t, empty.secret, '/analytics/campaign-stats')).toEqual({
      total: 0,
      active: 0,
      completed: 0,
      byStatus: { DRAFT: 0, SCHEDULED: 0, SENDING: 0, SENT: 0, CANCELLED: 0 },
      averageOpenRate: 0,
      averageClickRate: 0,
    });
  });
});

interface TopEvents {
  startDate: string;
  endDate: string;
  previousStartDate: string;
  data: { name: string; count: number; previousCount: number; trend: number | null }[];
}

describe('GET /analytics/top-events', () => {
  const JUNE = 'startDate=2025-06-01&endDate=2025-06-30';
  const times = (n: number, at: string) => Array.from({ length: n }, () => at);

  it('counts tracked names in the range against the period before; system events are left out', async () => {
    const { project } = await newProject(t.app);
    const events = [
      ...times(6, '2025-06-15T12:00:00Z').map((at) => ({ name: 'signup', at })),
      ...times(3, '2025-05-20T12:00:00Z').map((at) => ({ name: 'signup', at })),
      { name: 'purchase', at: '2025-06-30T23:59:00Z' },
      { name: 'purchase', at: '2025-06-01T00:00:00Z' },
      { name: 'purchase', at: '2025-07-01T00:00:00Z' }, // after the range
      { name: 'churn', at: '2025-06-10T00:00:00Z' },
      ...times(4, '2025-05-02T00:00:00Z').map((at) => ({ name: 'churn', at })),
      { name: 'churn', at: '2025-05-01T23:59:00Z' }, // before the previous period
      { name: 'only_before', at: '2025-05-15T00:00:00Z' },
      ...times(10, '2025-06-15T12:00:00Z').map((at) => ({ name: 'email.open', at })),
      { name: 'contact.subscribed', at: '2025-06-15T12:00:00Z' },
      { name: 'segment.vip.entry', at: '2025-06-15T12:00:00Z' },
    ];
    await seedEvents(t.db, project.id, events);
    const top = await ok<TopEvents>(t, project.secret, `/analytics/top-events?${JUNE}`);
    expect(top).toMatchObject({ startDate: '2025-06-01T00:00:00.000Z', endDate: '2025-07-01T00:00:00.000Z', previousStartDate: '2025-05-02T00:00:00.000Z' });
    expect(top.data).toEqual([
      { name: 'signup', count: 6, previousCount: 3, trend: 100 },
      { name: 'purchase', count: 2, previousCount: 0, trend: null },
      { name: 'churn', count: 1, previousCount: 4, trend: -75 },
    ]);
    expect((await ok<TopEvents>(t, project.secret, `/analytics/top-events?${JUNE}&limit=1`)).data.map((e) => e.name)).toEqual(['signup']);
    expectEnvelope(await getWithKey(t, project.secret, '/analytics/top-events?limit=x'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await getWithKey(t, project.secret, '/analytics/top-events?startDate=2025-01-01&endDate=2026-06-01'), 422, 'VALIDATION_ERROR');

    // A zone moves the boundaries: June in Kolkata starts at 2025-05-31T18:30Z.
    await seedEvents(t.db, project.id, [{ name: 'late_may_utc', at: '2025-05-31T19:00:00Z' }]);
    const kolkata = await ok<TopEvents>(t, project.secret, `/analytics/top-events?${JUNE}&tz=Asia/Kolkata`);
    expect(kolkata.startDate).toBe('2025-05-31T18:30:00.000Z');
    expect(kolkata.data.find((e) => e.name === 'late_may_utc')).toMatchObject({ count: 1 });
    expect(kolkata.data.find((e) => e.name === 'purchase')).toMatchObject({ count: 1 }); // 2025-06-30T23:59Z is July 1 there
    expect((await ok<TopEvents>(t, project.secret, `/analytics/top-events?${JUNE}`)).data.find((e) => e.name === 'late_may_utc')).toBeUndefined();
  });

  it('ranges of any length combine whole UTC days with the 15-minute buckets around them', async () => {
    const { project } = await newProject(t.app);
    await seedEvents(t.db, project.id, [
      { name: 'a', at: '2025-03-01T05:59:00Z' },
      { name: 'a', at: '2025-03-01T06:00:00Z' },
      { name: 'a', at: '2025-03-15T12:00:00Z' },
      { name: 'a', at: '2025-04-10T17:44:59Z' },
      { name: 'a', at: '2025-04-10T17:45:00Z' },
    ]);
    const count = async (query: string) => (await ok<TopEvents>(t, project.secret, `/analytics/top-events?${query}`)).data[0]?.count ?? 0;
    expect(await count('startDate=2025-03-01T06:00:00Z&endDate=2025-04-10T17:45:00Z')).toBe(3);
    expect(await count('startDate=2025-03-01T05:45:00Z&endDate=2025-04-10T18:00:00Z')).toBe(5);
    expect(await count('startDate=2025-03-15T11:00:00Z&endDate=2025-03-15T13:00:00Z')).toBe(1);
    expect(await count('startDate=2025-03-15&endDate=2025-03-15')).toBe(1);
  });

  it('the default range is the last 30 days; deleting a name takes it out', async () => {
    const { project } = await newProject(t.app);
    const track = (event: string) =>
      t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(project.public), payload: { email: 'buyer@example.com', event } });
    for (const event of ['viewed', 'viewed', 'bought']) expect((await track(event)).statusCode).toBe(200);
    const top = await ok<TopEvents>(t, project.secret, '/analytics/top-events');
    expect(top.data.map((e) => [e.name, e.count])).toEqual([['viewed', 2], ['bought', 1]]);
    expect((await t.app.inject({ method: 'DELETE', url: '/events/viewed', headers: bearer(project.secret) })).statusCode).toBe(204);
    expect((await ok<TopEvents>(t, project.secret, '/analytics/top-events')).data.map((e) => e.name)).toEqual(['bought']);
    expect(await rollupCounts(t.db, project.id)).toEqual(await directCounts(t.db, project.id));
  });
});

describe('GET /activity/stats', () => {
  it('counts what happened in the range and rates what became of the emails sent in it', async () => {
    const { project } = await newProject(t.app);
    await seedEmails(t.db, project.id, [
      { sent: '2025-06-03T10:00:00Z', delivered: '2025-06-03T10:00:02Z', humanOpened: '2025-06-04T08:00:00Z', clicked: '2025-06-04T08:01:00Z' },
      { sent: '2025-06-03T10:00:00Z', bounced: '2025-06-03T10:00:03Z' },
      { sent: '2025-06-03T10:00:00Z', delivered: '2025-06-03T10:00:02Z' },
      { sent: '2025-05-31T10:00:00Z', delivered: '2025-05-31T10:00:02Z', humanOpened: '2025-06-02T08:00:00Z' },
      { sent: '2025-06-10T10:00:00Z', delivered: '2025-06-10T10:00:02Z', humanOpened: '2025-06-10T11:00:00Z', complained: '2025-06-11T09:00:00Z' },
      { sent: '2025-07-01T00:00:00Z', humanOpened: '2025-07-01T00:10:00Z' },
    ]);
    await seedEvents(t.db, project.id, [
      { name: 'signup', at: '2025-06-05T00:00:00Z' },
      { name: 'signup', at: '2025-06-29T23:59:00Z' },
      { name: 'email.open', at: '2025-06-05T00:00:00Z' },
      { name: 'signup', at: '2025-07-01T00:00:00Z' },
    ]);
    const stats = await ok(t, project.secret, '/activity/stats?startDate=2025-06-01&endDate=2025-06-30');
    expect(stats).toEqual({
      startDate: '2025-06-01T00:00:00.000Z',
      endDate: '2025-07-01T00:00:00.000Z',
      tz: 'UTC',
      sent: 4,
      delivered: 3,
      opened: 3,
      clicked: 1,
      bounced: 1,
      complained: 1,
      openedIncludingMachine: 3,
      events: 2,
      openRate: 0.5,
      clickRate: 0.25,
      bounceRate: 0.25,
      complaintRate: 0.25,
      deliveryRate: 0.75,
      clickToOpenRate: 0.5,
    });
    const empty = await ok(t, project.secret, '/activity/stats?startDate=2024-01-01&endDate=2024-01-31');
    expect(empty).toMatchObject({ sent: 0, opened: 0, events: 0, openRate: 0, clickRate: 0, clickToOpenRate: 0 });
    expectEnvelope(await getWithKey(t, project.secret, '/activity/stats?startDate=2025-06-30&endDate=2025-06-01'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await getWithKey(t, project.secret, '/activity/stats?tz=Nowhere/Land'), 422, 'VALIDATION_ERROR');
    expect(await ok(t, project.secret, '/activity/stats')).toMatchObject({ sent: 0 }); // the last 30 days
  });
});
