import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptPendingInvitations } from '../../../src/modules/members/index.js';
import { newProject, signUp, type SignedInUser, uniqueEmail } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { accountThenLogin, addMember, asUser, invitationToken, invite, rolesOf } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { PUBLIC_URL: 'https://mail.example.test' } });
});
afterAll(() => t.close());

const list = (user: SignedInUser, projectId: string) => t.app.inject({ method: 'GET', url: `/projects/${projectId}/members`, headers: asUser(user) });
const accept = (user: SignedInUser, token: string) =>
  t.app.inject({ method: 'POST', url: '/auth/accept-invitation', headers: asUser(user), payload: { token } });
const revoke = (user: SignedInUser, projectId: string, invitationId: string) =>
  t.app.inject({ method: 'DELETE', url: `/projects/${projectId}/invitations/${invitationId}`, headers: asUser(user) });
const sha256 = (s: string) => createHash('sha256').update(s).digest();

describe('POST /projects/:id/members', () => {
  it('adds an existing account at once (no email) and refuses a second invite of a member with 409', async () => {
    const { user: owner, project } = await newProject(t.app);
    const other = await signUp(t.app);
    const res = await invite(t.app, owner, project.id, other.email.toUpperCase(), 'ADMIN');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({ status: 'ADDED', member: { userId: other.id, email: other.email, role: 'ADMIN', createdAt: expect.any(String) } });
    expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'OWNER', [other.id]: 'ADMIN' });
    const emails = await t.db.db.selectFrom('emails').select('id').where('to_email', '=', other.email).execute();
    expect(emails).toHaveLength(0);
    const again = await invite(t.app, owner, project.id, other.email, 'MEMBER');
    expect(again.statusCode).toBe(409);
  });

  it('gives an unknown address a pending invitation, listed with the members, emailed with a 7-day token link', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('invitee');
    const res = await invite(t.app, owner, project.id, email, 'ADMIN');
    expect(res.statusCode, res.body).toBe(201);
    const { invitation } = res.json();
    expect(res.json().status).toBe('INVITED');
    expect(invitation).toMatchObject({ email, role: 'ADMIN', invitedBy: { userId: owner.id, email: owner.email } });
    const days = (Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt)) / 86_400_000;
    expect(days).toBeCloseTo(7, 3);

    const listed = (await list(owner, project.id)).json();
    expect(listed.invitations).toEqual([invitation]);
    expect(listed.members.map((m: { userId: string }) => m.userId)).toEqual([owner.id]);

    const mail = await invitationToken(t.db, email);
    expect(mail.link).toBe(`https://mail.example.test/app/invitations?token=${mail.token}`);
    expect(mail.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(mail.text).toContain(owner.email);
    expect(mail.text).toContain('Test project');
    expect(mail.html).toContain(`href="${mail.link}"`);
    // Only the token's hash is stored.
    const row = await t.db.db.selectFrom('project_invitations').selectAll().where('id', '=', invitation.id).executeTakeFirstOrThrow();
    expect(row.token_hash?.equals(sha256(mail.token))).toBe(true);
    expect(row.status).toBe('PENDING');
  });

  it('escapes the project name in the HTML part and keeps it on one line in the subject', async () => {
    const { user: owner, project } = await newProject(t.app);
    await t.app.inject({ method: 'PATCH', url: `/users/@me/projects/${project.id}`, headers: asUser(owner), payload: { name: '<b>Win</b>\n"prize"' } });
    const email = uniqueEmail('escape');
    expect((await invite(t.app, owner, project.id, email)).statusCode).toBe(201);
    const mail = await invitationToken(t.db, email);
    expect(mail.html).toContain('&lt;b&gt;Win&lt;/b&gt;');
    expect(mail.html).not.toContain('<b>Win');
    const { subject } = await t.db.db.selectFrom('emails').select('subject').where('to_email', '=', email).executeTakeFirstOrThrow();
    expect(subject).not.toMatch(/[\r\n]/);
  });

  it('replaces a pending invitation on a re-invite: new role and link, the old link dead', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('again');
    await invite(t.app, owner, project.id, email, 'MEMBER');
    const first = await invitationToken(t.db, email);
    const second = await invite(t.app, owner, project.id, email, 'ADMIN');
    expect(second.statusCode).toBe(201);
    const fresh = await invitationToken(t.db, email);
    expect(fresh.token).not.toBe(first.token);
    expect((await list(owner, project.id)).json().invitations).toEqual([second.json().invitation]);

    const { user } = await accountThenLogin(t.app, t.db, { email, verified: false });
    expect((await accept(user, first.token)).statusCode).toBe(404);
    const ok = await accept(user, fresh.token);
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ projectId: project.id, projectName: 'Test project', role: 'ADMIN' });
  });

  it('refuses a MEMBER (403) and a malformed address (422 naming email), changing nothing', async () => {
    const { user: owner, project } = await newProject(t.app);
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    expect((await invite(t.app, member, project.id, uniqueEmail())).statusCode).toBe(403);
    const bad = await invite(t.app, owner, project.id, 'not-an-address');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.errors[0]).toMatchObject({ field: 'email', code: 'invalid_string' });
    const rows = await t.db.db.selectFrom('project_invitations').select('status').where('project_id', '=', project.id).execute();
    expect(rows.map((r) => r.status)).toEqual(['ADDED']);
  });
});

describe('accepting invitations', () => {
  it('joins on sign-in with a verified address (every pending invitation of it, at its role)', async () => {
    const a = await newProject(t.app);
    const b = await newProject(t.app);
    const email = uniqueEmail('verified');
    await invite(t.app, a.user, a.project.id, email, 'ADMIN');
    await invite(t.app, b.user, b.project.id, email, 'MEMBER');
    const { user, status } = await accountThenLogin(t.app, t.db, { email, verified: true });
    expect(status).toBe(200);
    expect((await rolesOf(t.db, a.project.id))[user.id]).toBe('ADMIN');
    expect((await rolesOf(t.db, b.project.id))[user.id]).toBe('MEMBER');
    expect((await list(a.user, a.project.id)).json().invitations).toEqual([]);
    const rows = await t.db.db.selectFrom('project_invitations').select(['status', 'accepted_by']).where('email', '=', email).execute();
    expect(rows).toEqual([
      { status: 'ACCEPTED', accepted_by: user.id },
      { status: 'ACCEPTED', accepted_by: user.id },
    ]);
  });

  it('joins on sign-up when the new account is verified (no SMTP_URL: accounts start verified)', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('capture');
    await invite(t.app, owner, project.id, email, 'ADMIN');
    const user = await signUp(t.app, email);
    expect((await rolesOf(t.db, project.id))[user.id]).toBe('ADMIN');
    expect((await list(owner, project.id)).json().invitations).toEqual([]);
  });

  it('does not join on sign-in with an unverified address; the emailed token then proves it', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('unverified');
    await invite(t.app, owner, project.id, email, 'MEMBER');
    const { token } = await invitationToken(t.db, email);
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: false });
    expect((await rolesOf(t.db, project.id))[user.id]).toBeUndefined();
    const ok = await accept(user, token);
    expect(ok.statusCode, ok.body).toBe(200);
    expect((await rolesOf(t.db, project.id))[user.id]).toBe('MEMBER');
    // The same user again: the same answer; nothing changes.
    expect((await accept(user, token)).json()).toEqual(ok.json());
  });

  it('does not join on sign-up with an unverified address (instance with SMTP_URL); the token does', async () => {
    const smtp = await createTestApp({ env: { SMTP_URL: 'smtp://127.0.0.1:9' } });
    try {
      const { user: owner, project } = await newProject(smtp.app);
      const email = uniqueEmail('signup');
      await invite(smtp.app, owner, project.id, email, 'MEMBER');
      const user = await signUp(smtp.app, email);
      const verified = await smtp.db.db.selectFrom('users').select('email_verified_at').where('id', '=', user.id).executeTakeFirstOrThrow();
      expect(verified.email_verified_at).toBeNull();
      expect((await rolesOf(smtp.db, project.id))[user.id]).toBeUndefined();
      const { token } = await invitationToken(smtp.db, email);
      const res = await smtp.app.inject({ method: 'POST', url: '/auth/accept-invitation', headers: asUser(user), payload: { token } });
      expect(res.statusCode, res.body).toBe(200);
      expect((await rolesOf(smtp.db, project.id))[user.id]).toBe('MEMBER');
    } finally {
      await smtp.close();
    }
  });

  it('does not let a used token bring back a member who left, and answers the role actually held', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('left');
    await invite(t.app, owner, project.id, email, 'MEMBER');
    const { token } = await invitationToken(t.db, email);
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: false });
    expect((await accept(user, token)).json().role).toBe('MEMBER');
    await t.app.inject({ method: 'PATCH', url: `/projects/${project.id}/members/${user.id}`, headers: asUser(owner), payload: { role: 'ADMIN' } });
    expect((await accept(user, token)).json().role).toBe('ADMIN');
    expect((await t.app.inject({ method: 'DELETE', url: `/projects/${project.id}/members/${user.id}`, headers: asUser(user) })).statusCode).toBe(204);
    expect((await accept(user, token)).statusCode).toBe(404);
    expect((await rolesOf(t.db, project.id))[user.id]).toBeUndefined();
  });

  it('shows a live invitation to whoever holds its token (GET /auth/invitation), and nothing once it is used', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('preview');
    const { invitation } = (await invite(t.app, owner, project.id, email, 'ADMIN')).json();
    const { token } = await invitationToken(t.db, email);
    const preview = await t.app.inject({ method: 'GET', url: `/auth/invitation?token=${token}` });
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json()).toEqual({ email, projectName: 'Test project', role: 'ADMIN', invitedBy: owner.email, expiresAt: invitation.expiresAt });
    expect((await t.app.inject({ method: 'GET', url: `/auth/invitation?token=${'x'.repeat(43)}` })).statusCode).toBe(404);
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: true });
    expect((await rolesOf(t.db, project.id))[user.id]).toBe('ADMIN');
    expect((await t.app.inject({ method: 'GET', url: `/auth/invitation?token=${token}` })).statusCode).toBe(404);
  });

  it('refuses the token to an account with another address (403) and an unknown token (404)', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('target');
    await invite(t.app, owner, project.id, email);
    const { token } = await invitationToken(t.db, email);
    const other = await signUp(t.app);
    const res = await accept(other, token);
    expect(res.statusCode).toBe(403);
    expect((await rolesOf(t.db, project.id))[other.id]).toBeUndefined();
    expect((await accept(other, 'x'.repeat(43))).statusCode).toBe(404);
    // Still pending for its address.
    expect((await list(owner, project.id)).json().invitations).toHaveLength(1);
  });

  it('lets nobody use an expired invitation (token 404, not listed, not joined on verified sign-in)', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('expired');
    await invite(t.app, owner, project.id, email);
    const { token } = await invitationToken(t.db, email);
    await t.db.db.updateTable('project_invitations').set({ expires_at: new Date(Date.now() - 1000) }).where('email', '=', email).execute();
    expect((await list(owner, project.id)).json().invitations).toEqual([]);
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: true });
    expect((await rolesOf(t.db, project.id))[user.id]).toBeUndefined();
    const res = await accept(user, token);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.message).toMatch(/expired/);
  });

  it('acceptPendingInvitations accepts nothing for an unverified address and keeps an existing role', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('direct');
    await invite(t.app, owner, project.id, email, 'ADMIN');
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: false });
    expect(await acceptPendingInvitations(t.db.db, { userId: user.id, email, emailVerified: false })).toEqual([]);
    await t.db.db.insertInto('memberships').values({ project_id: project.id, user_id: user.id, role: 'MEMBER' }).execute();
    expect(await acceptPendingInvitations(t.db.db, { userId: user.id, email, emailVerified: true })).toEqual([]);
    expect((await rolesOf(t.db, project.id))[user.id]).toBe('MEMBER');
  });
});

describe('DELETE /projects/:id/invitations/:invitationId', () => {
  it('revokes: not listed, the link dead, no join on verified sign-in', async () => {
    const { user: owner, project } = await newProject(t.app);
    const email = uniqueEmail('revoked');
    const { invitation } = (await invite(t.app, owner, project.id, email)).json();
    const { token } = await invitationToken(t.db, email);
    expect((await revoke(owner, project.id, invitation.id)).statusCode).toBe(204);
    expect((await list(owner, project.id)).json().invitations).toEqual([]);
    const { user } = await accountThenLogin(t.app, t.db, { email, verified: true });
    expect((await accept(user, token)).statusCode).toBe(404);
    expect((await rolesOf(t.db, project.id))[user.id]).toBeUndefined();
    expect((await revoke(owner, project.id, invitation.id)).statusCode).toBe(404);
  });

  it('keeps an invitation as OWNER from ADMINs, refuses MEMBERs, and another project\'s invitation is 404', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    const ownerInvite = (await invite(t.app, owner, project.id, uniqueEmail(), 'OWNER')).json().invitation;
    const adminInvite = (await invite(t.app, owner, project.id, uniqueEmail(), 'ADMIN')).json().invitation;
    expect((await revoke(admin, project.id, ownerInvite.id)).statusCode).toBe(403);
    expect((await revoke(member, project.id, adminInvite.id)).statusCode).toBe(403);
    const other = await newProject(t.app);
    expect((await revoke(other.user, other.project.id, adminInvite.id)).statusCode).toBe(404);
    expect((await revoke(admin, project.id, adminInvite.id)).statusCode).toBe(204);
    expect((await list(owner, project.id)).json().invitations.map((i: { id: string }) => i.id)).toEqual([ownerInvite.id]);
  });
});

describe('abuse limits', () => {
  const seed = async (rows: { project_id: string; invited_by: string; status: 'PENDING' | 'REVOKED'; created_at: Date }[]) => {
    await t.db.db
      .insertInto('project_invitations')
      .values(rows.map((r, i) => ({ ...r, email: uniqueEmail(`seed${i}`), role: 'MEMBER' as const, token_hash: sha256(uniqueEmail()), expires_at: new Date(Date.now() + 86_400_000) })))
      .execute();
  };

  it('allows 20 invites per project per hour, then 429 with Retry-After until the oldest leaves the hour', async () => {
    const { user: owner, project } = await newProject(t.app);
    const oldest = new Date(Date.now() - 50 * 60_000);
    await seed(Array.from({ length: 19 }, (_, i) => ({ project_id: project.id, invited_by: owner.id, status: 'REVOKED' as const, created_at: i === 0 ? oldest : new Date() })));
    expect((await invite(t.app, owner, project.id, uniqueEmail())).statusCode).toBe(201);
    const res = await invite(t.app, owner, project.id, uniqueEmail());
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(9 * 60 - 30);
    expect(retryAfter).toBeLessThanOrEqual(10 * 60);
    // An existing account counts too (probing who has an account costs the same).
    expect((await invite(t.app, owner, project.id, (await signUp(t.app)).email)).statusCode).toBe(429);
  });

  it('allows 50 invites by one user across projects per 24 hours', async () => {
    const { user: owner, project } = await newProject(t.app);
    const other = await newProject(t.app);
    const earlier = new Date(Date.now() - 23 * 3_600_000);
    await seed(Array.from({ length: 50 }, () => ({ project_id: other.project.id, invited_by: owner.id, status: 'REVOKED' as const, created_at: earlier })));
    const res = await invite(t.app, owner, project.id, uniqueEmail());
    expect(res.statusCode).toBe(429);
    expect(res.json().error.message).toMatch(/24 hours/);
  });

  it('keeps at most 50 live pending invitations per project (409); a re-invite of a pending address still works', async () => {
    const { user: owner, project } = await newProject(t.app);
    // Sent two hours ago by a former admin: neither rate counts them.
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    const formerAdmin = (await signUp(t.app)).id;
    await seed(Array.from({ length: 49 }, () => ({ project_id: project.id, invited_by: formerAdmin, status: 'PENDING' as const, created_at: twoHoursAgo })));
    const fiftieth = uniqueEmail('fiftieth');
    expect((await invite(t.app, owner, project.id, fiftieth)).statusCode).toBe(201);
    const res = await invite(t.app, owner, project.id, uniqueEmail());
    expect(res.statusCode).toBe(409);
    expect(res.json().error.message).toMatch(/50 pending/);
    expect((await invite(t.app, owner, project.id, fiftieth, 'ADMIN')).statusCode).toBe(201);
    // An address with an account joins regardless of the pending cap.
    expect((await invite(t.app, owner, project.id, (await signUp(t.app)).email)).statusCode).toBe(201);
  });
});
