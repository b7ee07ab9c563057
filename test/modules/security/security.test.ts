import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDeps } from '../../../src/app-deps.js';
import { checkProjectReputation } from '../../../src/modules/security/index.js';
import { webhooksRoutes } from '../../../src/modules/webhooks/webhooks.routes.js';
import { bearer, newProject, signUp, type SignedInUser, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp, testConfig } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { until } from '../../helpers/poll.js';
import { seedContact, seedSentEmails } from '../tracking/fixtures.js';
import { createSnsSigner, sesEvent } from '../webhooks/sns-signer.js';

const signer = createSnsSigner();
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    worker: { concurrency: 2 },
    extend: (app, db) => {
      const sns = { fetchCertificate: async () => signer.certificatePem };
      void app.register(webhooksRoutes, { ...createAppDeps(testConfig(), db.db), prefix: '/signed', sns });
    },
  });
});
afterAll(() => t.close());

async function projectWithSends(count: number, sentAt = 'now()'): Promise<{ user: SignedInUser; project: TestProject; messageIds: string[] }> {
  const { user, project } = await newProject(t.app);
  const contactId = await seedContact(t.db, project.id);
  await seedSentEmails(t.db, project.id, contactId, count, sentAt);
  const rows = await t.db.db.selectFrom('emails').select('message_id').where('project_id', '=', project.id).orderBy('id').execute();
  return { user, project, messageIds: rows.map((r) => r.message_id) };
}

async function notify(kind: 'Bounce' | 'Complaint', messageIds: string[]): Promise<void> {
  for (const messageId of messageIds) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/signed/webhooks/notifications',
      headers: { 'content-type': 'text/plain; charset=UTF-8' },
      payload: JSON.stringify(signer.notification(sesEvent(kind, { messageId }))),
    });
    expect(res.statusCode, res.body).toBe(200);
  }
}

/** Marks `n` of the project's sent emails bounced (or complained) at `at` (SQL): the triggers count them. */
async function markFeedback(projectId: string, column: 'bounced_at' | 'complained_at', n: number, at = 'now()'): Promise<void> {
  await sql`
    UPDATE emails SET ${sql.ref(column)} = ${sql.raw(at)}
    WHERE id IN (SELECT id FROM emails WHERE project_id = ${projectId} AND ${sql.ref(column)} IS NULL AND sent_at IS NOT NULL ORDER BY id LIMIT ${n})`.execute(t.db.db);
}

const check = (projectId: string, autoDisable = true) =>
  t.db.db.transaction().execute((trx) => checkProjectReputation(trx, projectId, { autoDisable }));
const projectRow = (id: string) => t.db.db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const suspensions = (id: string) => t.db.db.selectFrom('project_suspensions').selectAll().where('project_id', '=', id).orderBy('created_at').execute();
const getSecurity = (user: SignedInUser, id: string, path = `/projects/${id}/security`) =>
  t.app.inject({ method: 'GET', url: path.replace(':id', id), headers: { cookie: user.cookie } });

async function addMember(projectId: string, role: 'ADMIN' | 'MEMBER'): Promise<SignedInUser> {
  const user = await signUp(t.app);
  await t.db.db.insertInto('memberships').values({ project_id: projectId, user_id: user.id, role }).execute();
  return user;
}

describe('auto-disable through the bounce notifications', () => {
  it('all-time bounce rate: 7 of 100 is a warning, the 8th bounce (8%) disables the project with its side effects', async () => {
    const { user: owner, project, messageIds } = await projectWithSends(100);
    const admin = await addMember(project.id, 'ADMIN');
    const member = await addMember(project.id, 'MEMBER');
    const contactId = await seedContact(t.db, project.id, { email: 'queued@example.com' });
    // Queued mail (no delivery job: only the suspension's cancel job touches it).
    await sql`
      INSERT INTO emails (project_id, contact_id, source, type, to_email, from_email, subject, html, status, message_id)
      SELECT ${project.id}, ${contactId}, 'SEND', 'MARKETING', 'queued@example.com', 'news@sender.example', 'Hi', '<p>Hi</p>', 'PENDING',
             '<' || gen_random_uuid() || '@queued.test.example>'
      FROM generate_series(1, 3)`.execute(t.db.db);

    await notify('Bounce', messageIds.slice(0, 7));
    expect((await projectRow(project.id)).disabled).toBe(false);
    const warned = (await getSecurity(owner, project.id)).json();
    expect(warned.metrics.bounceRateAllTime).toMatchObject({ value: 0.07, level: 'warning', judged: true });
    expect(warned.level).toBe('warning');

    await notify('Bounce', messageIds.slice(7, 8));
    const row = await projectRow(project.id);
    expect(row.disabled).toBe(true);
    expect(row.disabled_reason).toBe('all-time bounce rate 8% ≥ 8% (8 of 100 emails)');
    expectEnvelope(await t.app.inject({ method: 'GET', url: '/contacts', headers: bearer(project.secret) }), 403, 'PROJECT_DISABLED');

    const [suspension, ...more] = await suspensions(project.id);
    expect(more).toHaveLength(0);
    expect(suspension).toMatchObject({ source: 'AUTOMATIC', reason: row.disabled_reason, lifted_at: null });
    expect(suspension?.metrics).toMatchObject({ level: 'critical', critical: ['bounceRateAllTime'], counts: { allTime: { sent: 100, bounced: 8 } } });

    // Queued mail cancelled by the job queued in the disabling transaction.
    await until('queued mail cancelled', async () => {
      const left = await t.db.db.selectFrom('emails').select('status').where('to_email', '=', 'queued@example.com').where('project_id', '=', project.id).execute();
      return left.length === 3 && left.every((e) => e.status === 'CANCELLED');
    });
    // OWNER and ADMIN emailed, not the MEMBER.
    const notices = await t.db.db
      .selectFrom('emails')
      .select(['to_email', 'subject', 'text'])
      .where('system_kind', '=', 'project-disabled')
      .where('system_project_id', '=', project.id)
      .orderBy('to_email')
      .execute();
    expect(notices.map((n) => n.to_email).sort()).toEqual([owner.email, admin.email].sort());
    expect(notices[0]?.subject).toBe('Project "Test project" has been disabled');
    expect(notices[0]?.text).toContain(row.disabled_reason ?? '');
    expect(notices.some((n) => n.to_email === member.email)).toBe(false);
    // Workflows: the cancel job was queued too (it runs and is gone, or waits).
    const wf = await sql<{ n: number }>`SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE key = ${`workflow-cancel-project:${project.id}`}`.execute(t.db.db);
    expect(wf.rows[0]?.n ?? 0).toBeLessThanOrEqual(1);

    // Later bounces record nothing more: one suspension, no second round of emails.
    await notify('Bounce', messageIds.slice(8, 12));
    expect(await suspensions(project.id)).toHaveLength(1);

    // Every member reads the state, with the suspension.
    for (const u of [owner, admin, member]) {
      for (const path of ['/projects/:id/security', '/users/@me/projects/:id/security']) {
        const res = await getSecurity(u, project.id, path);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({
          projectId: project.id,
          level: 'critical',
          disabled: true,
          disabledReason: row.disabled_reason,
          autoDisable: true,
          young: true,
          windows: { allTime: { sent: 100, bounces: 12, complaints: 0 }, last24h: { sent: 100, bounces: 12 } },
          suspensions: [{ source: 'AUTOMATIC', reason: row.disabled_reason, liftedAt: null, liftedBy: null }],
        });
      }
    }
  });

  it('complaints: 2 in 2,000 (0.1%) is a warning, the 3rd (0.15%) disables', async () => {
    const { project, messageIds } = await projectWithSends(2000);
    await notify('Complaint', messageIds.slice(0, 2));
    expect((await projectRow(project.id)).disabled).toBe(false);
    await notify('Complaint', messageIds.slice(2, 3));
    // Both complaint rates are critical now; the reason names the one furthest past its threshold
    // (all time: 0.15 / 0.12 = 1.25; 7 days: 0.15 / 0.15 = 1).
    expect((await projectRow(project.id)).disabled_reason).toMatch(/^all-time complaint rate 0\.15% ≥ 0\.12% \(3 of 2,?000 emails\)$/);
  });

  it('soft bounces never count', async () => {
    const { project, messageIds } = await projectWithSends(100);
    for (const messageId of messageIds.slice(0, 20)) {
      const payload = JSON.stringify(signer.notification(sesEvent('Bounce', { messageId }, { bounceType: 'Transient' })));
      await t.app.inject({ method: 'POST', url: '/signed/webhooks/notifications', headers: { 'content-type': 'text/plain' }, payload });
    }
    expect((await projectRow(project.id)).disabled).toBe(false);
    expect((await t.db.db.selectFrom('project_suspensions').select('id').where('project_id', '=', project.id).execute())).toHaveLength(0);
  });
});

describe('windows, project age and AUTO_DISABLE_PROJECTS', () => {
  it('absolute 24 h bounces: 200 disable a project younger than 30 days, not an older one', async () => {
    const young = await projectWithSends(10000);
    const old = await projectWithSends(10000);
    await sql`UPDATE projects SET created_at = now() - interval '40 days' WHERE id = ${old.project.id}`.execute(t.db.db);
    for (const p of [young, old]) await markFeedback(p.project.id, 'bounced_at', 199);
    expect((await check(young.project.id))?.assessment.metrics.bounces24h.level).toBe('warning');
    expect((await check(old.project.id))?.assessment.metrics.bounces24h.level).toBe('healthy');
    for (const p of [young, old]) await markFeedback(p.project.id, 'bounced_at', 1);
    expect((await check(young.project.id))?.disabledReason).toBe('hard bounces in 24 hours: 200 ≥ 200');
    expect((await check(old.project.id))?.disabledReason).toBeUndefined();
    expect((await projectRow(old.project.id)).disabled).toBe(false);
  });

  it('the 7-day rate counts sends and bounces of the last 7 days only; all time counts everything', async () => {
    const { project } = await projectWithSends(2000, "now() - interval '10 days'");
    await markFeedback(project.id, 'bounced_at', 60, "now() - interval '10 days'");
    const contactId = await seedContact(t.db, project.id, { email: 'recent@example.com' });
    await seedSentEmails(t.db, project.id, contactId, 100);
    await sql`UPDATE emails SET bounced_at = now() WHERE id IN (SELECT id FROM emails WHERE project_id = ${project.id} AND sent_at > now() - interval '1 day' ORDER BY id LIMIT 9)`.execute(t.db.db);
    const under = await check(project.id);
    expect(under?.assessment.metrics.bounceRate7d).toMatchObject({ value: 0.09, level: 'warning' });
    expect(under?.assessment.metrics.bounceRateAllTime.value).toBeCloseTo(69 / 2100);
    await sql`UPDATE emails SET bounced_at = now() WHERE id IN (SELECT id FROM emails WHERE project_id = ${project.id} AND sent_at > now() - interval '1 day' AND bounced_at IS NULL ORDER BY id LIMIT 1)`.execute(t.db.db);
    expect((await check(project.id))?.disabledReason).toBe('bounce rate over 7 days 10% ≥ 10% (10 of 100 emails)');
  });

  it('with auto-disable off a critical level is reported, nothing is disabled', async () => {
    const { project } = await projectWithSends(100);
    await markFeedback(project.id, 'bounced_at', 30);
    const result = await check(project.id, false);
    expect(result?.assessment.level).toBe('critical');
    expect(result?.disabledReason).toBeUndefined();
    expect((await projectRow(project.id)).disabled).toBe(false);
    expect(await suspensions(project.id)).toHaveLength(0);
  });
});

describe('the operator lift (CLI enable-project)', () => {
  it('records who lifted it; the reputation counts again from the lift, so the next bounce does not re-disable', async () => {
    const { user, project, messageIds } = await projectWithSends(100);
    await notify('Bounce', messageIds.slice(0, 8));
    expect((await projectRow(project.id)).disabled).toBe(true);

    const dataDir = mkdtempSync(join(tmpdir(), 'security-cli-'));
    const res = await runCli(['enable-project', '--project', project.id, '--by', 'alice@ops'], { dataDir });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('suspension lifted by alice@ops');
    expect((await projectRow(project.id)).disabled).toBe(false);
    const [lifted] = await suspensions(project.id);
    expect(lifted).toMatchObject({ lifted_by: 'alice@ops', lifted_sent: 100, lifted_bounced: 8 });
    expect(lifted?.lifted_at).toBeInstanceOf(Date);

    await notify('Bounce', messageIds.slice(8, 9));
    expect((await projectRow(project.id)).disabled).toBe(false);
    const state = (await getSecurity(user, project.id)).json();
    expect(state).toMatchObject({ disabled: false, level: 'healthy', windows: { allTime: { sent: 0, bounces: 1 } } });
    expect(state.countingSince).toBe(lifted?.lifted_at?.toISOString());
    expect(state.suspensions[0]).toMatchObject({ liftedBy: 'alice@ops', liftedAt: lifted?.lifted_at?.toISOString() });

    const again = await runCli(['enable-project', '--project', project.id], { dataDir });
    expect(again.stdout).toContain('was not disabled; nothing lifted');
    expect(await suspensions(project.id)).toHaveLength(1);
  });

  it('disable-project records an OPERATOR suspension with the reason', async () => {
    const { project } = await newProject(t.app);
    const res = await runCli(['disable-project', '--project', project.id, '--reason', 'spam reports'], { dataDir: mkdtempSync(join(tmpdir(), 'security-cli-')) });
    expect(res.code, res.stderr).toBe(0);
    expect(await suspensions(project.id)).toMatchObject([{ source: 'OPERATOR', reason: 'spam reports', lifted_at: null }]);
    expect((await projectRow(project.id)).disabled_reason).toBe('spam reports');
  });
});

describe('GET security and setup-state: who may read', () => {
  it('foreign, unknown and malformed projects are 404; no session is 401', async () => {
    const { project } = await newProject(t.app);
    const stranger = await signUp(t.app);
    for (const path of [`/projects/${project.id}/security`, `/users/@me/projects/${project.id}/security`, `/projects/${project.id}/setup-state`]) {
      expectEnvelope(await t.app.inject({ method: 'GET', url: path, headers: { cookie: stranger.cookie } }), 404, 'NOT_FOUND');
      expect((await t.app.inject({ method: 'GET', url: path })).statusCode).toBe(401);
    }
    expectEnvelope(await getSecurity(stranger, '0190a0a0-0000-7000-8000-000000000000'), 404, 'NOT_FOUND');
    expectEnvelope(await getSecurity(stranger, 'nope'), 404, 'NOT_FOUND');
  });

  it('setup-state: every member reads what onboarding needs; counts are capped at 10,000', async () => {
    const { user: owner, project } = await newProject(t.app);
    const member = await addMember(project.id, 'MEMBER');
    const empty = await t.app.inject({ method: 'GET', url: `/projects/${project.id}/setup-state`, headers: { cookie: member.cookie } });
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({
      projectId: project.id,
      hasVerifiedDomain: false,
      contactCount: 0,
      contactCountCapped: false,
      templateCount: 0,
      templateCountCapped: false,
      hasSentEmail: false,
      lastCampaignSentAt: null,
      hasEnabledWorkflow: false,
      billing: { enabled: false },
    });

    await sql`
      INSERT INTO contacts (project_id, email, subscribed)
      SELECT ${project.id}, 'c' || g || '@example.com', true FROM generate_series(1, 10001) g`.execute(t.db.db);
    await sql`
      INSERT INTO domains (project_id, domain, dkim_selector, dkim_public_key, dkim_private_key, verified)
      VALUES (${project.id}, ${`${project.id}.example.com`}, 'sel', 'unused', 'unused', true)`.execute(t.db.db);
    await seedSentEmails(t.db, project.id, await seedContact(t.db, project.id, { email: 'sent@example.com' }), 1);
    const full = (await t.app.inject({ method: 'GET', url: `/projects/${project.id}/setup-state`, headers: { cookie: owner.cookie } })).json();
    expect(full).toMatchObject({ hasVerifiedDomain: true, contactCount: 10000, contactCountCapped: true, hasSentEmail: true });
  });
});
