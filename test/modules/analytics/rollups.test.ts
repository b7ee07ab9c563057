import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenPurpose } from '../../../src/mail/compliance.js';
import { compactRollups } from '../../../src/modules/analytics/index.js';
import { bearer, newProject, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { directCounts, rollupCounts, seedCampaign, seedEmails, seedEvents } from './helpers.js';

/**
 * The rollups of migration 0029 equal a direct COUNT over the emails and events, whatever wrote
 * them: inserts with milestones, milestone updates (also moved or cleared ones), opens and clicks
 * through tracking, /v1/track batches, deleting events of a name, deleting contacts (one, bulk),
 * a campaign deleted, compaction, and a project reset; another project's counts never move.
 */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ worker: { concurrency: 2 } });
});
afterAll(() => t.close());

const track = (p: TestProject, email: string, event: string, subscribed?: boolean) =>
  t.app.inject({ method: 'POST', url: '/v1/track', headers: bearer(p.public), payload: { email, event, ...(subscribed !== undefined && { subscribed }) } });

const contactIdOf = async (projectId: string, email: string) =>
  (await t.db.db.selectFrom('contacts').select('id').where('project_id', '=', projectId).where('email', '=', email).executeTakeFirstOrThrow()).id;

async function expectTruthful(projectId: string): Promise<void> {
  const [rollups, direct] = [await rollupCounts(t.db, projectId), await directCounts(t.db, projectId)];
  expect(rollups).toEqual(direct);
}

/** A workload touching every writer of the counted tables. */
async function workload(p: TestProject): Promise<void> {
  // Tracked events (group-committed batches), with subscription changes (system events).
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) => track(p, `user${i % 5}@example.com`, ['viewed', 'bought', 'left'][i % 3] ?? 'viewed', i % 7 === 0 ? false : undefined)),
  );
  expect(results.every((r) => r.statusCode === 200)).toBe(true);
  // Historical events of other contacts (old buckets and days).
  const old = await seedEvents(t.db, p.id, [
    { name: 'viewed', at: '2025-01-01T10:00:00Z' },
    { name: 'signup', at: '2025-01-01T10:05:00Z' },
    { name: 'signup', at: '2025-02-03T23:59:59Z' },
    { name: 'email.sent', at: '2025-02-03T23:59:59Z' },
  ]);

  // Emails: inserted with milestones, then moved along.
  const campaign = await seedCampaign(t.db, p.id, { name: 'Spring' });
  const doomed = await seedCampaign(t.db, p.id, { name: 'Doomed' });
  const ids = await seedEmails(t.db, p.id, [
    { sent: '2025-03-01T10:00:00Z', delivered: '2025-03-01T10:00:03Z', humanOpened: '2025-03-02T08:00:00Z', campaignId: campaign },
    { sent: '2025-03-01T10:00:00Z', bounced: '2025-03-01T10:00:04Z', campaignId: campaign },
    { sent: '2025-03-01T10:00:00Z', campaignId: doomed },
    { contactId: old },
    { contactId: old },
    { sent: new Date(), contactId: old },
    { contactId: old },
  ]);
  const [opened, bounced, , pending1, pending2, fresh, pending3] = ids as [string, string, string, string, string, string, string];
  await t.db.db.updateTable('emails').set({ sent_at: sql`now()`, status: 'SENT' }).where('id', '=', pending1).execute();
  await t.db.db.updateTable('emails').set({ sent_at: new Date('2025-03-05T10:00:00Z'), delivered_at: new Date('2025-03-05T10:01:00Z') }).where('id', '=', pending2).execute();
  await t.db.db.updateTable('emails').set({ sent_at: new Date('2025-03-06T10:00:00Z') }).where('id', '=', pending2).execute(); // moved
  await t.db.db.updateTable('emails').set({ bounced_at: null }).where('id', '=', bounced).execute(); // cleared
  await t.db.db // several milestones at once, in different buckets
    .updateTable('emails')
    .set({ sent_at: new Date('2025-03-07T10:00:00Z'), delivered_at: new Date('2025-03-07T10:20:00Z'), bounced_at: new Date('2025-03-08T00:00:00Z') })
    .where('id', '=', pending3)
    .execute();
  await t.db.db.updateTable('emails').set({ complained_at: new Date('2025-03-03T00:00:00Z') }).where('id', '=', opened).execute();
  // Opens and clicks through tracking: a machine, a person, a click.
  const openUrl = (e: string) => `/t/o/${t.deps.tokens.sign(TokenPurpose.open, { e })}`;
  await t.app.inject({ method: 'GET', url: openUrl(fresh), headers: { 'user-agent': 'Mozilla/5.0' } });
  await t.app.inject({ method: 'GET', url: openUrl(pending1), headers: { 'user-agent': 'Thunderbird/128.0' } });
  await t.app.inject({ method: 'GET', url: `/t/c/${t.deps.tokens.sign(TokenPurpose.click, { e: fresh, u: 'https://example.com/' })}` });
  // A campaign deleted: its counts go with it, the emails stay counted.
  await t.db.db.deleteFrom('campaigns').where('id', '=', doomed).execute();
}

describe('rollups after a mixed workload', () => {
  let owner: SignedInUser;
  let a: TestProject;
  let b: TestProject;
  beforeAll(async () => {
    ({ user: owner, project: a } = await newProject(t.app));
    ({ project: b } = await newProject(t.app));
    await workload(a);
    await workload(b);
  });

  it('equal direct counts after inserts, updates, opens, clicks and a /v1/track burst', async () => {
    await expectTruthful(a.id);
    await expectTruthful(b.id);
    const counted = await rollupCounts(t.db, a.id);
    expect(counted.events.length).toBeGreaterThan(3);
    expect(counted.campaigns).toHaveLength(1);
  });

  it('stay equal when events of a name, a contact and contacts in bulk are deleted', async () => {
    const before = await rollupCounts(t.db, b.id);
    expect((await t.app.inject({ method: 'DELETE', url: '/events/viewed', headers: bearer(a.secret) })).statusCode).toBe(204);
    await expectTruthful(a.id);

    const one = await contactIdOf(a.id, 'user1@example.com');
    expect((await t.app.inject({ method: 'DELETE', url: `/contacts/${one}`, headers: bearer(a.secret) })).statusCode).toBe(204);
    await expectTruthful(a.id);

    const many = await Promise.all(['user2@example.com', 'user3@example.com'].map((e) => contactIdOf(a.id, e)));
    const bulk = await t.app.inject({ method: 'POST', url: '/contacts/bulk-delete', headers: bearer(a.secret), payload: { contactIds: many } });
    expect(bulk.statusCode, bulk.body).toBe(202);
    const jobId = bulk.json<{ jobId: string }>().jobId;
    await until('bulk delete done', async () => {
      const res = await t.app.inject({ method: 'GET', url: `/contacts/bulk/${jobId}`, headers: bearer(a.secret) });
      return res.json<{ status: string }>().status === 'COMPLETED';
    });
    await expectTruthful(a.id);
    expect(await rollupCounts(t.db, b.id)).toEqual(before);
  });

  it('stay equal while names are tracked and deleted at the same time', async () => {
    const burst = Promise.all(Array.from({ length: 60 }, (_, i) => track(a, `racer${i % 6}@example.com`, i % 2 ? 'race' : 'steady')));
    const deletes = (async () => {
      for (let i = 0; i < 5; i++) await t.app.inject({ method: 'DELETE', url: '/events/race', headers: bearer(a.secret) });
    })();
    await Promise.all([burst, deletes]);
    await expectTruthful(a.id);
  });

  it('keep their sums through compaction of the writer shards', async () => {
    const before = await rollupCounts(t.db, a.id);
    await compactRollups(t.db.db);
    expect(await rollupCounts(t.db, a.id)).toEqual(before);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM analytics_email_counts WHERE project_id = ${a.id} AND shard <> 0 AND bucket < now() - interval '1 hour'`.execute(t.db.db);
    expect(rows[0]?.n).toBe(0);
  });

  it('go with a project reset (no DELETE trigger: the fast wipe stays possible), and count again after it', async () => {
    const otherBefore = await rollupCounts(t.db, b.id);
    const reset = await t.app.inject({ method: 'POST', url: `/users/@me/projects/${a.id}/reset`, headers: { cookie: owner.cookie }, payload: { confirm: a.name } });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(await rollupCounts(t.db, a.id)).toEqual({ emails: [], campaigns: [], events: [], days: [] });
    expect(await rollupCounts(t.db, b.id)).toEqual(otherBefore);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_trigger
      WHERE NOT tgisinternal AND (tgtype & 8) <> 0
        AND tgrelid IN ('emails'::regclass, 'events'::regclass, 'contacts'::regclass, 'analytics_email_counts'::regclass,
                        'analytics_campaign_counts'::regclass, 'analytics_event_counts'::regclass, 'analytics_event_daily'::regclass)`.execute(t.db.db);
    expect(rows[0]?.n).toBe(0);

    expect((await track(a, 'again@example.com', 'viewed')).statusCode).toBe(200);
    await seedEmails(t.db, a.id, [{ sent: new Date() }]);
    await expectTruthful(a.id);
    expect((await rollupCounts(t.db, a.id)).events).toHaveLength(1);
  });
});
