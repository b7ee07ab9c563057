import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { microsOf } from '../../../src/modules/activity/activity.rules.js';
import { type FeedQuery, readFeedPage } from '../../../src/modules/activity/feed.repo.js';
import { ACTIVITY_TYPES } from '../../../src/modules/activity/index.js';
import { newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { allPages, feed, get, type KnownActivity, pairs, seedKnownActivity } from './helpers.js';

let t: TestApp;
let project: TestProject;
let known: KnownActivity;
let other: TestProject;
let otherKnown: KnownActivity;

beforeAll(async () => {
  t = await createTestApp();
  project = (await newProject(t.app)).project;
  known = await seedKnownActivity(t.db, project.id, 'p');
  other = (await newProject(t.app)).project;
  otherKnown = await seedKnownActivity(t.db, other.id, 'q');
});
afterAll(() => t.close());

describe('GET /activity', () => {
  it('lists every source in one feed, newest first, ties by source then id', async () => {
    const page = await feed(t.app, project, 'limit=100');
    expect(pairs(page.data)).toEqual(known.expected);
    expect(page).toMatchObject({ hasMore: false, cursor: null, total: known.expected.length, totalCapped: false });
    for (let i = 1; i < page.data.length; i++) {
      expect((page.data[i - 1]?.timestamp ?? '') >= (page.data[i]?.timestamp ?? '')).toBe(true);
    }
  });

  it('gives each item its contact and the names of what it concerns', async () => {
    const { data } = await feed(t.app, project, 'limit=100');
    const byId = new Map(data.map((i) => [i.id, i]));
    const { alice, bob } = known.contacts;
    const campaign = { id: known.campaigns.sent, name: 'Spring sale p' };
    const template = { id: known.templateId, name: 'Welcome template p' };
    const workflow = { id: known.workflowId, name: 'Onboarding p' };

    const click = data.find((i) => i.type === 'email.click');
    expect(click).toEqual({
      id: expect.any(String),
      type: 'email.click',
      timestamp: new Date(known.base.getTime() + 6 * 60_000).toISOString(),
      contact: { id: alice.id, email: alice.email },
      metadata: { emailId: known.emails.campaign, subject: 'Spring is here p', url: 'https://act.example/offer', campaign, template },
    });
    expect(data.find((i) => i.type === 'email.bounce')).toMatchObject({
      contact: bob,
      metadata: { emailId: known.emails.direct, subject: 'Your receipt p', bounceType: 'Permanent', template },
    });
    expect(data.find((i) => i.type === 'email.bounce')?.metadata).not.toHaveProperty('campaign');
    expect(data.filter((i) => i.type === 'email.sent').map((i) => i.metadata)).toEqual([
      { emailId: known.emails.workflow, subject: 'Welcome aboard p', template, workflow },
      { emailId: known.emails.campaign, subject: 'Spring is here p', messageId: 'm1', campaign, template },
    ]);
    expect(data.find((i) => i.type === 'segment.entry')).toMatchObject({
      contact: alice,
      metadata: { segment: { id: known.segmentId, name: 'VIP Users' }, eventName: 'segment.vip-users.entry' },
    });
    expect(data.find((i) => i.type === 'contact.unsubscribed')).toMatchObject({ contact: bob, metadata: {} });
    expect(data.find((i) => i.metadata.name === 'signed_up')).toMatchObject({ type: 'event.tracked', contact: alice, metadata: { name: 'signed_up', data: { plan: 'pro' } } });

    const sent = byId.get(`${known.campaigns.sent}:sent`);
    expect(sent).toEqual({
      id: `${known.campaigns.sent}:sent`,
      type: 'campaign.sent',
      timestamp: new Date(known.base.getTime() + 2 * 60_000).toISOString(),
      metadata: { campaign, subject: 'Subject of Spring sale p', totalRecipients: 2, scheduledFor: new Date(known.base.getTime() + 60_000).toISOString() },
    });
    expect(byId.get(`${known.campaigns.sent}:scheduled`)?.metadata).toEqual({ campaign, subject: 'Subject of Spring sale p', status: 'SENT', scheduledFor: expect.any(String) });

    const failed = data.find((i) => i.type === 'workflow.failed');
    expect(failed).toMatchObject({ contact: bob, metadata: { workflow, execution: { id: failed?.id.split(':')[0] }, status: 'FAILED', error: 'boom' } });
    const exited = data.find((i) => i.type === 'workflow.completed' && i.metadata.status === 'EXITED');
    expect(exited?.metadata).toMatchObject({ workflow, exitReason: 'done early' });
    expect(data.find((i) => i.type === 'workflow.started')).toMatchObject({ contact: alice, metadata: { workflow, status: 'RUNNING' } });
  });

  it('leaves out campaigns that never reached their time (draft, cancelled before it, still scheduled)', async () => {
    const ids = (await feed(t.app, project, 'limit=100')).data.map((i) => i.id.split(':')[0]);
    for (const id of [known.campaigns.draft, known.campaigns.cancelled, known.campaigns.scheduled]) expect(ids).not.toContain(id);
  });

  it('pages with an opaque cursor: the pages put together are the whole list, once each', async () => {
    for (const limit of [1, 2, 5, 7]) {
      const items = await allPages(t.app, project, '', limit);
      expect(pairs(items)).toEqual(known.expected);
    }
  });

  it('filters by types: one, several, a pattern type, campaign and workflow types', async () => {
    const only = async (types: string) => pairs((await feed(t.app, project, `limit=100&types=${encodeURIComponent(types)}`)).data);
    const expectedOf = (...types: string[]) => known.expected.filter(([type]) => types.includes(type));
    for (const types of [
      ['email.click'],
      ['email.sent', 'email.complaint'],
      ['segment.entry'],
      ['segment.exit', 'event.tracked'],
      ['contact.subscribed', 'contact.unsubscribed'],
      ['campaign.sent'],
      ['campaign.scheduled', 'workflow.failed'],
      ['workflow.completed'],
      ['workflow.started', 'email.open'],
    ]) {
      expect(await only(types.join(',')), types.join(',')).toEqual(expectedOf(...types));
    }
    // Spaces and repeats are forgiven.
    expect(await only(' email.click , email.click')).toEqual(expectedOf('email.click'));
    const page = await feed(t.app, project, 'types=email.open,email.click&limit=1');
    expect(page).toMatchObject({ total: 2, hasMore: true });
  });

  it('reads the same events by type per row as by name (the plan past 64 names or 2,000 distinct names)', async () => {
    const query = (events: FeedQuery['events']): FeedQuery => ({
      projectId: project.id,
      start: microsOf(new Date(Date.now() - 30 * 86_400_000)),
      end: microsOf(new Date()),
      limit: 100,
      events,
      campaigns: { scheduled: false, sent: false },
      workflows: { started: false, completed: false, failed: false },
    });
    const ids = async (events: FeedQuery['events']) => (await readFeedPage(t.db.db, query(events))).map((r) => r.id);
    const byName = await ids({ kind: 'names', names: ['email.click', 'segment.vip-users.entry', 'signed_up', 'page_viewed'] });
    expect(byName).toHaveLength(5);
    expect(await ids({ kind: 'types', types: ['email.click', 'segment.entry', 'event.tracked'] })).toEqual(byName);
    expect(await ids({ kind: 'types', types: ['segment.exit', 'contact.subscribed'] })).toEqual(
      known.expected.filter(([type]) => type === 'segment.exit' || type === 'contact.subscribed').map(([, id]) => id),
    );
  });

  it('filters by contact (campaign items concern no contact)', async () => {
    const { alice } = known.contacts;
    const items = await allPages(t.app, project, `contactId=${alice.id}`, 3);
    expect(items.length).toBeGreaterThan(5);
    expect(items.every((i) => i.contact?.id === alice.id)).toBe(true);
    const expectedIds = (await feed(t.app, project, 'limit=100')).data.filter((i) => i.contact?.id === alice.id).map((i) => i.id);
    expect(items.map((i) => i.id)).toEqual(expectedIds);
    expect(pairs((await feed(t.app, project, `contactId=${alice.id}&types=campaign.sent,workflow.completed`)).data)).toEqual(
      known.expected.filter(([type, id]) => type === 'workflow.completed' && expectedIds.includes(id)),
    );
  });

  it('reads the last 30 days by default; startDate and endDate bound the window (inclusive)', async () => {
    const ids = (await feed(t.app, project, 'limit=100')).data.map((i) => i.id);
    expect(ids).not.toContain(known.oldEventId);
    const since = new Date(Date.now() - 41 * 86_400_000).toISOString();
    expect((await feed(t.app, project, `limit=100&startDate=${since}`)).data.map((i) => i.id)).toContain(known.oldEventId);

    const at = (m: number) => new Date(known.base.getTime() + m * 60_000).toISOString();
    const narrow = await feed(t.app, project, `startDate=${encodeURIComponent(at(5))}&endDate=${encodeURIComponent(at(8))}`);
    expect(narrow.data.map((i) => i.type)).toEqual(['email.complaint', 'email.bounce', 'email.click', 'email.open']);
    // Only an endDate: the 30 days before it.
    const old = await feed(t.app, project, `endDate=${new Date(Date.now() - 39 * 86_400_000).toISOString()}`);
    expect(old.data.map((i) => i.id)).toEqual([known.oldEventId]);
    // A date without a time is midnight UTC.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    expect((await feed(t.app, project, `limit=100&endDate=${tomorrow}`)).data).toHaveLength(known.expected.length);
  });

  it('never shows another project\'s activity, whatever the filter', async () => {
    const mine = await feed(t.app, project, 'limit=100');
    const theirs = new Set((await feed(t.app, other, 'limit=100')).data.map((i) => i.id));
    expect(theirs.size).toBe(otherKnown.expected.length);
    expect(mine.data.filter((i) => theirs.has(i.id))).toEqual([]);
    expect(JSON.stringify(mine)).not.toMatch(/ q"|alice-q|bob-q/);
    expect((await feed(t.app, project, `contactId=${otherKnown.contacts.alice.id}`)).data).toEqual([]);
    for (const types of ['email.click', 'segment.entry', 'event.tracked', 'campaign.sent', 'workflow.failed']) {
      expect((await feed(t.app, project, `limit=100&types=${types}`)).data.filter((i) => theirs.has(i.id)), types).toEqual([]);
    }
  });

  it('refuses bad input with 422 envelopes naming the field', async () => {
    const refused = async (query: string, field: string) => {
      const error = expectEnvelope(await get(t.app, project, `/activity?${query}`), 422, 'VALIDATION_ERROR');
      expect(error.errors.map((e: { field: string }) => e.field), query).toContain(field);
      return error;
    };
    const unknown = await refused('types=email.sent,email.opened', 'types');
    expect(unknown.errors[0].message).toContain('"email.opened"');
    for (const type of ACTIVITY_TYPES) expect(unknown.errors[0].message).toContain(type);
    await refused('contactId=not-a-uuid', 'contactId');
    await refused('cursor=not-a-cursor', 'cursor');
    await refused(`cursor=${Buffer.from('2026-01-01T00:00:00.000000Z|9|00000000-0000-4000-8000-000000000000|2026-01-01T00:00:00.000000Z').toString('base64url')}`, 'cursor');
    await refused('startDate=yesterday', 'startDate');
    await refused('endDate=2026-02-30', 'endDate');
    await refused('startDate=2026-02-01&endDate=2026-01-01', 'endDate');
    await refused(`startDate=${new Date(Date.now() + 86_400_000).toISOString()}`, 'startDate');
    await refused('limit=0', 'limit');
    await refused('limit=abc', 'limit');
  });

  it('clamps limit to 100 and defaults it to 20', async () => {
    expect((await feed(t.app, project, '')).data).toHaveLength(20);
    expect((await feed(t.app, project, 'limit=1000')).data).toHaveLength(known.expected.length);
  });
});

describe('GET /activity/types', () => {
  it('lists every type with whether the project has any', async () => {
    // email.received (inbound mail, docs/bounces.md): outside every window the tests above read.
    await t.db.db
      .insertInto('events')
      .values({ project_id: project.id, contact_id: known.contacts.bob.id, name: 'email.received', data: JSON.stringify({ subject: 'Hi' }), created_at: new Date(Date.now() - 50 * 86_400_000) })
      .execute();
    const res = await get(t.app, project, '/activity/types');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ data: { type: string; source: string; available: boolean }[] }>();
    expect(body.data.map((d) => d.type)).toEqual([...ACTIVITY_TYPES]);
    expect(body.data.every((d) => d.available)).toBe(true);
    expect(body.data.find((d) => d.type === 'campaign.sent')?.source).toBe('campaigns');

    const fresh = (await newProject(t.app)).project;
    const none = (await get(t.app, fresh, '/activity/types')).json<typeof body>();
    expect(none.data.filter((d) => d.available)).toEqual([]);
  });
});

describe('GET /activity/recent-count', () => {
  it('counts the items of the last N minutes (default 5, 1 to 60)', async () => {
    const fresh = (await newProject(t.app)).project;
    const contact = await t.db.db.insertInto('contacts').values({ project_id: fresh.id, email: 'recent@act.example', subscribed: true }).returning('id').executeTakeFirstOrThrow();
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000);
    await t.db.db
      .insertInto('events')
      .values([1, 2, 4, 10, 30, 59, 70].map((m) => ({ project_id: fresh.id, contact_id: contact.id, name: 'ping', created_at: at(m) })))
      .execute();
    const workflow = await t.db.db.insertInto('workflows').values({ project_id: fresh.id, name: 'W', trigger_config: JSON.stringify({ eventName: 'ping' }) }).returning('id').executeTakeFirstOrThrow();
    // Started 20 minutes ago and completed 3 minutes ago: two items, one in each window.
    await t.db.db
      .insertInto('workflow_executions')
      .values({ project_id: fresh.id, workflow_id: workflow.id, contact_id: contact.id, status: 'COMPLETED', started_at: at(20), completed_at: at(3) })
      .execute();
    const count = async (query: string) => {
      const res = await get(t.app, fresh, `/activity/recent-count${query}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ count: number; minutes: number; since: string }>();
    };
    expect(await count('')).toMatchObject({ count: 4, minutes: 5 });
    expect(await count('?minutes=60')).toMatchObject({ count: 8, minutes: 60 });
    expect(await count('?minutes=1')).toMatchObject({ count: 0 });
    expectEnvelope(await get(t.app, fresh, '/activity/recent-count?minutes=61'), 422, 'VALIDATION_ERROR');
    expectEnvelope(await get(t.app, fresh, '/activity/recent-count?minutes=0'), 422, 'VALIDATION_ERROR');
    // Another project's activity is not counted.
    expect((await get(t.app, project, '/activity/recent-count?minutes=60')).json<{ count: number }>().count).toBe(0);
  });
});

describe('GET /activity/upcoming', () => {
  it("lists the project's own scheduled campaigns and waiting steps only", async () => {
    // Another project's waiting DELAY, due tomorrow.
    const step = await t.db.db
      .insertInto('workflow_steps')
      .values({ project_id: other.id, workflow_id: otherKnown.workflowId, type: 'DELAY', name: 'Hold', config: JSON.stringify({ amount: 1, unit: 'days' }) })
      .returning('id')
      .executeTakeFirstOrThrow();
    const carol = await t.db.db.insertInto('contacts').values({ project_id: other.id, email: 'carol-q@act.example', subscribed: true }).returning('id').executeTakeFirstOrThrow();
    const execution = await t.db.db
      .insertInto('workflow_executions')
      .values({ project_id: other.id, workflow_id: otherKnown.workflowId, contact_id: carol.id, status: 'WAITING', current_step_id: step.id })
      .returning('id')
      .executeTakeFirstOrThrow();
    await t.db.db
      .insertInto('workflow_step_executions')
      .values({ project_id: other.id, execution_id: execution.id, workflow_id: otherKnown.workflowId, step_id: step.id, status: 'WAITING', due_at: new Date(Date.now() + 86_400_000) })
      .execute();
    const upcoming = async (p: TestProject) => (await get(t.app, p, '/activity/upcoming?daysAhead=3')).json<{ data: { type: string; campaign?: { id: string }; step?: { id: string } }[] }>().data;
    expect(await upcoming(project)).toEqual([{ type: 'campaign.scheduled', dueAt: expect.any(String), campaign: { id: known.campaigns.scheduled, name: 'Summer p', subject: 'Subject of Summer p' } }]);
    expect((await upcoming(other)).map((u) => u.campaign?.id ?? u.step?.id)).toEqual([step.id, otherKnown.campaigns.scheduled]);
  });
});
