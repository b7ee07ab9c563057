import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDeps } from '../../../src/app-deps.js';
import { setProjectDisabled } from '../../../src/cli/operator.repo.js';
import { webhooksRoutes } from '../../../src/modules/webhooks/webhooks.routes.js';
import { bearer, newProject, type TestProject } from '../../helpers/accounts.js';
import { createTestApp, type TestApp, testConfig } from '../../helpers/app.js';
import { expectEnvelope } from '../../helpers/envelope.js';
import { seedContact, seedSentEmails } from '../tracking/fixtures.js';
import { createSnsSigner, sesEvent } from './sns-signer.js';

const signer = createSnsSigner();
const logLines: { msg: string; projectId?: string; reason?: string }[] = [];
const logStream = new Writable({
  write(chunk: Buffer, _enc, done) {
    for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
    done();
  },
});

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    logger: pino({ level: 'warn' }, logStream),
    extend: (app, db) => {
      const sns = { fetchCertificate: async () => signer.certificatePem };
      void app.register(webhooksRoutes, { ...createAppDeps(testConfig(), db.db), prefix: '/signed', sns });
    },
  });
});
afterAll(() => t.close());

/** A project with `count` emails sent (at `sentAt`, SQL), returning their Message-IDs. */
async function projectWithSends(count: number, sentAt = 'now()'): Promise<{ project: TestProject; messageIds: string[] }> {
  const { project } = await newProject(t.app);
  const contactId = await seedContact(t.db, project.id);
  await seedSentEmails(t.db, project.id, contactId, count, sentAt);
  const rows = await t.db.db.selectFrom('emails').select('message_id').where('project_id', '=', project.id).orderBy('id').execute();
  return { project, messageIds: rows.map((r) => r.message_id) };
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

const isDisabled = async (p: TestProject) =>
  (await t.db.db.selectFrom('projects').select('disabled').where('id', '=', p.id).executeTakeFirstOrThrow()).disabled;
const listContacts = (p: TestProject) => t.app.inject({ method: 'GET', url: '/contacts', headers: bearer(p.secret) });

describe('auto-disable on a bad 7-day reputation', () => {
  it('disables at a 10% hard-bounce rate over 100 emails (not at 9%), with a log line giving the reason, until an operator re-enables it', async () => {
    const { project, messageIds } = await projectWithSends(100);
    await notify('Bounce', messageIds.slice(0, 9));
    expect(await isDisabled(project)).toBe(false);
    expect((await listContacts(project)).statusCode).toBe(200);

    await notify('Bounce', messageIds.slice(9, 10));
    expect(await isDisabled(project)).toBe(true);
    expectEnvelope(await listContacts(project), 403, 'PROJECT_DISABLED');
    const line = logLines.find((l) => l.projectId === project.id && /auto-disabled/.test(l.msg));
    expect(line?.reason).toBe('bounce rate 10.00% ≥ 10%');
    // Its workflow executions are cancelled by a job queued in the disabling transaction.
    const { rows: cancelJobs } = await sql<{ key: string }>`
      SELECT key FROM graphile_worker._private_jobs WHERE key = ${`workflow-cancel-project:${project.id}`}`.execute(t.db.db);
    expect(cancelJobs).toHaveLength(1);

    // Notifications keep being applied to a disabled project; re-enabling is the operator's call.
    await notify('Bounce', messageIds.slice(10, 11));
    await setProjectDisabled(t.db.db, project.id, false);
    expect((await listContacts(project)).statusCode).toBe(200);
  });

  it('does not judge fewer than 100 emails', async () => {
    const { project, messageIds } = await projectWithSends(99);
    await notify('Bounce', messageIds.slice(0, 30));
    expect(await isDisabled(project)).toBe(false);
  });

  it('ignores soft bounces', async () => {
    const { project, messageIds } = await projectWithSends(100);
    for (const messageId of messageIds.slice(0, 20)) {
      const payload = JSON.stringify(signer.notification(sesEvent('Bounce', { messageId }, { bounceType: 'Transient' })));
      await t.app.inject({ method: 'POST', url: '/signed/webhooks/notifications', headers: { 'content-type': 'text/plain' }, payload });
    }
    expect(await isDisabled(project)).toBe(false);
  });

  it('counts only emails sent in the last 7 days', async () => {
    const { project, messageIds: old } = await projectWithSends(300, "now() - interval '8 days'");
    await notify('Bounce', old.slice(0, 60));
    expect(await isDisabled(project)).toBe(false);
    // 100 recent sends: the 300 old ones neither dilute nor add to the rate.
    const contactId = await seedContact(t.db, project.id);
    await seedSentEmails(t.db, project.id, contactId, 100);
    const recent = await t.db.db
      .selectFrom('emails')
      .select('message_id')
      .where('project_id', '=', project.id)
      .where('message_id', 'not in', old)
      .execute();
    await notify('Bounce', recent.slice(0, 9).map((r) => r.message_id));
    expect(await isDisabled(project)).toBe(false);
    await notify('Bounce', recent.slice(9, 10).map((r) => r.message_id));
    expect(await isDisabled(project)).toBe(true);
  });

  it('disables at a 0.15% complaint rate (3 in 2,000), not at 0.1%', async () => {
    const { project, messageIds } = await projectWithSends(2000);
    await notify('Complaint', messageIds.slice(0, 2));
    expect(await isDisabled(project)).toBe(false);
    await notify('Complaint', messageIds.slice(2, 3));
    expect(await isDisabled(project)).toBe(true);
    expectEnvelope(await listContacts(project), 403, 'PROJECT_DISABLED');
    const line = logLines.find((l) => l.projectId === project.id && /auto-disabled/.test(l.msg));
    expect(line?.reason).toBe('complaint rate 0.15% ≥ 0.15%');
  });
});
