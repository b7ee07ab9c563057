import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createProject, signUp, type SignedInUser, uniqueEmail } from '../helpers/accounts.js';
import { createTestApp } from '../helpers/app.js';
import { until } from '../helpers/poll.js';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js';
import { addVerifiedDomain, createSendTestApp, type SendTestApp } from './emails/helpers.js';
import { createWorkflow, track, waitForExecutions } from './workflows/engine-helpers.js';

/** The instance sends (SMTP_URL = a real SMTP sink on loopback), on a database of this file's own. */
let sink: SmtpSink;
let t: SendTestApp;
beforeAll(async () => {
  sink = await startSmtpSink();
  t = await createSendTestApp({ env: { SMTP_URL: sink.url, PUBLIC_URL: 'https://mail.example.test', SYSTEM_FROM: 'no-reply@mail.example.test' } });
  await t.runWorker();
  // The instance's first user is verified whatever the mail setting: take that place first.
  await signUp(t.app);
});
afterAll(async () => {
  await t?.close();
  await sink?.close();
});

const post = (url: string, payload: object, cookie?: string) =>
  t.app.inject({ method: 'POST', url, payload, headers: cookie ? { cookie } : {} });
const me = (user: SignedInUser) => t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });

/** The tokens of the links emailed to `to` for `page`, oldest first. */
function tokensSent(to: string, page: 'verify-email' | 'reset-password'): string[] {
  const re = new RegExp(`/app/${page}\\?token=([A-Za-z0-9_-]{43})`);
  // The text part may be quoted-printable: soft line breaks joined, `=3D` read as `=`.
  const decoded = (raw: Buffer) => raw.toString('utf8').replace(/=\r?\n/g, '').replace(/=3D/gi, '=');
  return sink.messagesTo(to).flatMap((m) => re.exec(decoded(m.raw))?.[1] ?? []);
}
async function waitForTokens(to: string, page: 'verify-email' | 'reset-password', count: number): Promise<string[]> {
  await until(`${count} ${page} emails to ${to}`, () => tokensSent(to, page).length >= count);
  return tokensSent(to, page);
}
/** No password-reset job left: every request was looked up (and its email, if any, queued). */
const resetJobsDone = () =>
  until('password-reset jobs done', async () => {
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks k ON k.id = j.task_id
      WHERE k.identifier IN ('account-password-reset', 'send-email')`.execute(t.db.db);
    return rows[0]?.n === 0;
  });

describe('email verification', () => {
  it('signup starts unverified and emails a link that verifies once; GET /users/@me says emailVerified', async () => {
    const user = await signUp(t.app);
    expect((await me(user)).json<{ emailVerified: boolean }>().emailVerified).toBe(false);
    const [token = ''] = await waitForTokens(user.email, 'verify-email', 1);
    const [msg] = sink.messagesTo(user.email);
    expect(msg?.from).toBe('no-reply@mail.example.test');
    const first = await post('/auth/verify-email', { token });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({ success: true });
    expect((await me(user)).json<{ emailVerified: boolean }>().emailVerified).toBe(true);
    // Single use.
    const again = await post('/auth/verify-email', { token });
    expect(again.statusCode).toBe(400);
    expect(again.json<{ error: { code: string } }>().error.code).toBe('INVALID_TOKEN');
    // Stored hashed: the table never holds the token itself.
    const rows = await t.db.db.selectFrom('account_tokens').select('token_hash').where('email', '=', user.email).execute();
    expect(rows.some((r) => r.token_hash.toString('utf8').includes(token) || r.token_hash.toString('base64url') === token)).toBe(false);
  });

  it('verifying the address accepts the invitations pending for it', async () => {
    const owner = await signUp(t.app);
    await post('/auth/verify-email', { token: (await waitForTokens(owner.email, 'verify-email', 1))[0] ?? '' });
    const project = await createProject(t.app, owner);
    const invitee = uniqueEmail();
    const invited = await post(`/projects/${project.id}/members`, { email: invitee, role: 'ADMIN' }, owner.cookie);
    expect(invited.json<{ status: string }>().status, invited.body).toBe('INVITED');
    // Signed up unverified: not a member yet (an unproven address joins nothing).
    const user = await signUp(t.app, invitee);
    const projects = async () => (await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: { cookie: user.cookie } })).json<{ id: string; role: string }[]>();
    expect(await projects()).toEqual([]);
    const [token = ''] = await waitForTokens(invitee, 'verify-email', 1);
    expect((await post('/auth/verify-email', { token })).statusCode).toBe(200);
    expect((await projects()).map((p) => ({ id: p.id, role: p.role }))).toEqual([{ id: project.id, role: 'ADMIN' }]);
  });

  it('refuses an expired token (24 hours after it was sent)', async () => {
    const user = await signUp(t.app);
    const [token = ''] = await waitForTokens(user.email, 'verify-email', 1);
    await t.db.db.updateTable('account_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` }).where('email', '=', user.email).execute();
    const res = await post('/auth/verify-email', { token });
    expect(res.statusCode).toBe(400);
    expect((await me(user)).json<{ emailVerified: boolean }>().emailVerified).toBe(false);
  });

  it('sends at most 3 links per account per hour: the 4th request is 429', async () => {
    const user = await signUp(t.app); // the sign-up's link is the first
    expect((await post('/auth/request-verification', {}, user.cookie)).statusCode).toBe(200);
    expect((await post('/auth/request-verification', {}, user.cookie)).statusCode).toBe(200);
    const fourth = await post('/auth/request-verification', {}, user.cookie);
    expect(fourth.statusCode).toBe(429);
    expect(fourth.json<{ error: { code: string } }>().error.code).toBe('RATE_LIMIT_EXCEEDED');
    await waitForTokens(user.email, 'verify-email', 3);
    expect(await t.db.db.selectFrom('account_tokens').select('id').where('email', '=', user.email).execute()).toHaveLength(3);
    expect((await post('/auth/request-verification', {})).statusCode).toBe(401);
  });

  it('an unknown token and a malformed body are refused', async () => {
    expect((await post('/auth/verify-email', { token: 'x'.repeat(43) })).statusCode).toBe(400);
    const bad = await post('/auth/verify-email', {});
    expect(bad.statusCode).toBe(422);
    expect(bad.json<{ error: { errors: { field: string }[] } }>().error.errors[0]?.field).toBe('token');
  });
});

describe('password reset', () => {
  it('answers the same for an unknown and a known address, and emails only the account', async () => {
    const user = await signUp(t.app);
    const unknown = uniqueEmail('nobody');
    const a = await post('/auth/request-password-reset', { email: unknown });
    const b = await post('/auth/request-password-reset', { email: user.email });
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    expect(a.body).toBe(b.body);
    expect(a.json()).toEqual({ success: true });
    await waitForTokens(user.email, 'reset-password', 1);
    await resetJobsDone();
    expect(sink.messagesTo(unknown)).toEqual([]);
  });

  it('ends every session, sets the password, marks the address verified, and works once', async () => {
    const user = await signUp(t.app);
    const other = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } });
    const otherCookie = other.headers['set-cookie']?.toString().split(';')[0] ?? '';
    await post('/auth/request-password-reset', { email: user.email.toUpperCase() });
    const [token = ''] = await waitForTokens(user.email, 'reset-password', 1);
    const weak = await post('/auth/reset-password', { token, password: 'short' });
    expect(weak.statusCode).toBe(422);
    const res = await post('/auth/reset-password', { token, password: 'a brand new password' });
    expect(res.statusCode, res.body).toBe(200);
    expect((await me(user)).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: otherCookie } })).statusCode).toBe(401);
    const oldLogin = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } });
    expect(oldLogin.statusCode).toBe(401);
    const login = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'a brand new password' } });
    expect(login.statusCode).toBe(200);
    expect(login.json<{ emailVerified: boolean }>().emailVerified).toBe(true);
    expect((await post('/auth/reset-password', { token, password: 'yet another password' })).statusCode).toBe(400);
  });

  it('a reset link expires after an hour', async () => {
    const user = await signUp(t.app);
    await post('/auth/request-password-reset', { email: user.email });
    const [token = ''] = await waitForTokens(user.email, 'reset-password', 1);
    await t.db.db.updateTable('account_tokens').set({ expires_at: sql<Date>`now() - interval '1 second'` }).where('email', '=', user.email).where('purpose', '=', 'password-reset').execute();
    expect((await post('/auth/reset-password', { token, password: 'a brand new password' })).statusCode).toBe(400);
  });

  it('sends at most 3 per account per hour; the 4th request gets the same answer and sends nothing', async () => {
    const user = await signUp(t.app);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await post('/auth/request-password-reset', { email: user.email }));
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    expect(new Set(answers.map((r) => r.body)).size).toBe(1);
    await resetJobsDone();
    expect(tokensSent(user.email, 'reset-password')).toHaveLength(3);
  });
});

describe('an unverified owner\'s project cannot send', () => {
  it('refuses /v1/send, campaign send and workflow SEND_EMAIL with 403 EMAIL_NOT_VERIFIED, until an owner verifies', async () => {
    const user = await signUp(t.app);
    const project = await createProject(t.app, user);
    const { domain } = await addVerifiedDomain(t, project.id, { verifyOwners: false });
    const from = `hi@${domain}`;

    const sent = await t.app.inject({ method: 'POST', url: '/v1/send', headers: bearer(project.secret), payload: { to: 'r@example.com', from, subject: 's', body: '<p>b</p>' } });
    expect(sent.statusCode).toBe(403);
    expect(sent.json<{ error: { code: string; message: string } }>().error).toMatchObject({ code: 'EMAIL_NOT_VERIFIED', message: expect.stringContaining('verifies their email') });

    const campaign = await t.app.inject({ method: 'POST', url: '/campaigns', headers: bearer(project.secret), payload: { name: 'c', subject: 's', body: '<p>b</p>', from } });
    expect(campaign.statusCode, campaign.body).toBe(201);
    const campaignId = campaign.json<{ data: { id: string } }>().data.id;
    for (const payload of [{}, { scheduledFor: new Date(Date.now() + 3_600_000).toISOString() }]) {
      const res = await t.app.inject({ method: 'POST', url: `/campaigns/${campaignId}/send`, headers: bearer(project.secret), payload });
      expect(res.statusCode).toBe(403);
      expect(res.json<{ error: { code: string } }>().error.code).toBe('EMAIL_NOT_VERIFIED');
    }
    const testSend = await t.app.inject({ method: 'POST', url: `/campaigns/${campaignId}/test`, headers: bearer(project.secret), payload: { email: 'me@example.com' } });
    expect(testSend.statusCode, testSend.body).toBe(403);
    expect(testSend.json<{ error: { code: string } }>().error.code).toBe('EMAIL_NOT_VERIFIED');

    const template = await t.db.db.insertInto('templates').values({ project_id: project.id, subject: 's', body: '<p>b</p>', from_email: from }).returning('id').executeTakeFirstOrThrow();
    const wf = await createWorkflow(t.db, project.id, {
      eventName: 'signed-up',
      steps: [{ key: 'mail', type: 'SEND_EMAIL', config: { templateId: template.id }, templateId: template.id }],
      edges: [['trigger', 'mail']],
    });
    await track(t.app, project, { email: 'w@example.com', event: 'signed-up' });
    const [execution] = await waitForExecutions(t.db, wf.id, 1, ['FAILED']);
    expect(execution?.error).toContain('verifies their email');
    // Nothing was queued on any path.
    expect(await t.db.db.selectFrom('emails').select('id').where('project_id', '=', project.id).execute()).toEqual([]);

    const [token = ''] = await waitForTokens(user.email, 'verify-email', 1);
    expect((await post('/auth/verify-email', { token })).statusCode).toBe(200);
    const ok = await t.app.inject({ method: 'POST', url: '/v1/send', headers: bearer(project.secret), payload: { to: 'r@example.com', from, subject: 's', body: '<p>b</p>' } });
    expect(ok.statusCode, ok.body).toBe(200);
  });
});

describe('without SMTP_URL', () => {
  it('creates users verified (nothing could reach them)', async () => {
    const app = await createTestApp();
    try {
      const user = await signUp(app.app);
      const res = await app.app.inject({ method: 'GET', url: '/users/@me', headers: { cookie: user.cookie } });
      expect(res.json<{ emailVerified: boolean }>().emailVerified).toBe(true);
    } finally {
      await app.close();
    }
  });
});
