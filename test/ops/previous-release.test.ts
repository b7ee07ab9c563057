import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shippedMigrationNames } from '../../src/db/migrate.js';
import { until } from '../helpers/poll.js';
import { call, type Cluster, type ClusterProject, ok as okCall, setUpProject, startCluster } from './cluster.js';
import { checkOutRelease, PREVIOUS_RELEASE, type ReleaseCheckout } from './previous-release.js';

// Issue 16 point 6, docs/operations.md "Upgrades": the API of the previous release (checked out
// from this clone's history, test/ops/previous-release.json) keeps serving while this version's
// first process migrates the database, restarts on the new schema, and serves its main routes;
// this version's worker delivers what it accepted. Fails on any migration of this version that
// contracts what the previous release still reads or writes.
const DOMAIN = 'release.example.com';

let checkout: ReleaseCheckout;
let cluster: Cluster;
let project: ClusterProject;

const ok = (method: string, url: string, opts?: Parameters<typeof okCall>[4]) => okCall(cluster, 0, method, url, opts);

beforeAll(async () => {
  checkout = checkOutRelease(PREVIOUS_RELEASE);
  // No process yet: the release's API comes first and migrates to its own schema.
  cluster = await startCluster({ apis: 0, workers: 0, apiRoot: checkout.root, env: { RATE_LIMIT_PER_MINUTE: '10000000' } });
  await cluster.add('api');
  project = await setUpProject(cluster, DOMAIN);
}, 300_000);

afterAll(async () => {
  await cluster?.stop();
  checkout?.remove();
}, 120_000);

describe(`the API of release ${PREVIOUS_RELEASE.version} on this version's schema`, () => {
  it('keeps serving through the migration, restarts on the new schema, and serves its main routes', { timeout: 300_000 }, async () => {
    const shipped = shippedMigrationNames();
    // A release's migrations stay: a newer version only adds.
    expect(checkout.migrations.filter((m) => !shipped.includes(m))).toEqual([]);
    const newer = shipped.filter((m) => !checkout.migrations.includes(m));

    const key = { key: project.secret };
    const publicKey = { key: project.publicKey };
    await ok('POST', '/v1/track', { ...publicKey, body: { email: 'before@example.com', event: 'signed_up' } });

    // This version's first process (a worker) migrates while the release's API serves.
    await cluster.add('worker');
    const applied = (await cluster.query<{ name: string }>('SELECT name FROM kysely_migration')).map((r) => r.name);
    expect(applied).toEqual(expect.arrayContaining([...shipped]));
    await ok('POST', '/v1/track', { ...publicKey, body: { email: 'during@example.com', event: 'signed_up' } });

    // The release's API restarts (a crash, a rollout step not yet reached) on the newer schema.
    const [old] = cluster.apis;
    if (!old) throw new Error('no API process');
    const restarted = await cluster.replace(old);
    if (newer.length > 0) expect(restarted.logMessages()).toContain('the database has migrations of a newer version: running on its schema (docs/operations.md "Upgrades")');
    expect((await fetch(`${cluster.base(0)}/health/ready`)).status).toBe(200);

    // A workflow made through the release's API, run by this version's worker.
    const wf = await ok('POST', '/workflows', { ...key, body: { name: 'welcome', eventName: 'signed_up' } });
    const trigger = ((await ok('GET', `/workflows/${String(wf.id)}`, key)).steps as { id: string; type: string }[]).find((s) => s.type === 'TRIGGER');
    const update = await ok('POST', `/workflows/${String(wf.id)}/steps`, { ...key, body: { type: 'UPDATE_CONTACT', name: 'mark', config: { updates: { welcomed: true } } } });
    await ok('POST', `/workflows/${String(wf.id)}/transitions`, { ...key, body: { fromStepId: trigger?.id, toStepId: update.id } });
    await ok('PATCH', `/workflows/${String(wf.id)}`, { ...key, body: { enabled: true } });

    // Contacts and events.
    expect((await ok('POST', '/v1/track', { ...publicKey, body: { email: 'ada@example.com', event: 'signed_up', data: { plan: 'pro' } } })).success).toBe(true);
    const created = await ok('POST', '/contacts', { ...key, body: { email: 'grace@example.com', data: { plan: 'free' } } });
    const found = (await ok('GET', '/contacts?search=ada', key)).data as { id: string; data: Record<string, unknown> }[];
    expect(found.map((c) => c.data.plan)).toEqual(['pro']);
    const ada = String(found[0]?.id);
    await ok('PATCH', `/contacts/${ada}`, { ...key, body: { data: { plan: 'team' } } });
    expect(((await ok('GET', `/contacts/${String(created.id)}`, key)) as { email: string }).email).toBe('grace@example.com');
    expect(((await ok('GET', '/events/names', key)).data as { name: string }[]).map((e) => e.name)).toContain('signed_up');
    await until('the workflow ran for ada (this version\'s worker)', async () => ((await ok('GET', `/contacts/${ada}`, key)).data as Record<string, unknown>).welcomed === true, { timeoutMs: 60_000, intervalMs: 200 });

    // A segment, a send, and a campaign to the segment.
    const segment = await ok('POST', '/segments', { ...key, body: { name: 'Teams', condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'team' }] }] } } });
    expect(segment.memberCount).toBe(1);
    const sent = await ok('POST', '/v1/send', { ...key, headers: { 'idempotency-key': 'release-send-1' }, body: { to: 'ada@example.com', from: `hello@${DOMAIN}`, subject: 'Hi', body: '<p>Hi</p>' } });
    const again = await call(cluster, 0, 'POST', '/v1/send', { ...key, headers: { 'idempotency-key': 'release-send-1' }, body: { to: 'ada@example.com', from: `hello@${DOMAIN}`, subject: 'Hi', body: '<p>Hi</p>' } });
    expect([again.status, (again.body.error as { code: string }).code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    const campaign = (await ok('POST', '/campaigns', { ...key, body: { name: 'News', subject: 'News', body: '<p>News</p>', from: `news@${DOMAIN}`, audienceType: 'SEGMENT', segmentId: segment.id } })).data as { id: string };
    await ok('POST', `/campaigns/${campaign.id}/send`, { ...key, body: {} });
    await until('the campaign SENT', async () => ((await ok('GET', `/campaigns/${campaign.id}`, key)).status as string) === 'SENT', { timeoutMs: 60_000, intervalMs: 200 });
    // The send and the campaign's one email, each once (the Message-ID carries the email's id).
    const campaignEmails = (await cluster.query<{ id: string }>('SELECT id FROM emails WHERE campaign_id = $1', [campaign.id])).map((r) => r.id);
    const expected = [(sent.data as { emails: [{ email: string }] }).emails[0].email, ...campaignEmails].sort();
    expect(expected).toHaveLength(2);
    await until('both emails at the sink', () => cluster.sink.messages.length >= 2, { timeoutMs: 60_000, intervalMs: 100 });
    await until('no delivery job left', async () => (await cluster.query("SELECT 1 FROM graphile_worker.jobs WHERE task_identifier IN ('send-email', 'send-batch', 'campaign-deliver')")).length === 0, { timeoutMs: 60_000, intervalMs: 200 });
    expect(cluster.sink.messages.map((m) => m.messageId?.slice(1, m.messageId.indexOf('@'))).sort()).toEqual(expected);
    expect(cluster.sink.messagesTo('ada@example.com')).toHaveLength(2);
    console.log(`previous release: ${JSON.stringify({ release: PREVIOUS_RELEASE.version, dependencies: checkout.dependencies, newerMigrations: newer })}`);
  });
});
