import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, signUp } from '../../helpers/accounts.js';
import { createTestApp, type TestApp } from '../../helpers/app.js';
import { until } from '../../helpers/poll.js';
import { addMember, asUser, invite, removeMember, rolesOf, setRole } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('GET /projects/:id/members', () => {
  it('lists members with their address, role and join time to any member, and is 404 to a stranger', async () => {
    const { user: owner, project } = await newProject(t.app);
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    const res = await t.app.inject({ method: 'GET', url: `/projects/${project.id}/members`, headers: asUser(member) });
    expect(res.statusCode).toBe(200);
    expect(res.json().members).toEqual([
      { userId: owner.id, email: owner.email, role: 'OWNER', createdAt: expect.any(String) },
      { userId: member.id, email: member.email, role: 'MEMBER', createdAt: expect.any(String) },
    ]);
    const stranger = await signUp(t.app);
    const hidden = await t.app.inject({ method: 'GET', url: `/projects/${project.id}/members`, headers: asUser(stranger) });
    expect(hidden.statusCode).toBe(404);
    const malformed = await t.app.inject({ method: 'GET', url: '/projects/not-a-uuid/members', headers: asUser(owner) });
    expect(malformed.statusCode).toBe(404);
  });

  it('refuses API keys: members are managed by people (401)', async () => {
    const { project } = await newProject(t.app);
    const res = await t.app.inject({ method: 'GET', url: `/projects/${project.id}/members`, headers: { authorization: `Bearer ${project.secret}` } });
    expect(res.statusCode).toBe(401);
  });
});

describe('the project as each role sees it', () => {
  it('shows the secret key to OWNERs and ADMINs only: a MEMBER gets null (keys are ADMIN business, DESIGN §4)', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    const seen = async (user: typeof owner) => {
      const one = await t.app.inject({ method: 'GET', url: `/users/@me/projects/${project.id}`, headers: asUser(user) });
      const list = await t.app.inject({ method: 'GET', url: '/users/@me/projects', headers: asUser(user) });
      const listed = list.json<{ id: string; secret: string | null; public: string }[]>().find((p) => p.id === project.id);
      return { one: one.json<{ secret: string | null; public: string }>(), listed };
    };
    for (const user of [owner, admin]) {
      const { one, listed } = await seen(user);
      expect([one.secret, listed?.secret]).toEqual([project.secret, project.secret]);
    }
    const { one, listed } = await seen(member);
    expect([one.secret, listed?.secret]).toEqual([null, null]);
    expect(one.public).toBe(project.public);
  });
});

describe('PATCH /projects/:id/members/:userId', () => {
  it('lets an OWNER change any role and transfer ownership, then step down', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const promoted = await setRole(t.app, owner, project.id, admin.id, 'OWNER');
    expect(promoted.statusCode, promoted.body).toBe(200);
    expect(promoted.json()).toMatchObject({ userId: admin.id, email: admin.email, role: 'OWNER' });
    const stepDown = await setRole(t.app, owner, project.id, owner.id, 'MEMBER');
    expect(stepDown.statusCode, stepDown.body).toBe(200);
    expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'MEMBER', [admin.id]: 'OWNER' });
  });

  it('never demotes the last OWNER (409), not even by themselves', async () => {
    const { user: owner, project } = await newProject(t.app);
    await addMember(t.app, owner, project.id, 'ADMIN');
    const res = await setRole(t.app, owner, project.id, owner.id, 'ADMIN');
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: 'CONFLICT', message: expect.stringMatching(/at least one OWNER/) });
    expect((await rolesOf(t.db, project.id))[owner.id]).toBe('OWNER');
  });

  it('lets nobody raise their own role (an ADMIN cannot make themselves OWNER)', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const res = await setRole(t.app, admin, project.id, admin.id, 'OWNER');
    expect(res.statusCode).toBe(403);
    expect(res.json().error.message).toMatch(/raise their own role/);
    // Lowering one's own role is allowed.
    expect((await setRole(t.app, admin, project.id, admin.id, 'MEMBER')).statusCode).toBe(200);
    expect((await rolesOf(t.db, project.id))[admin.id]).toBe('MEMBER');
  });

  it('keeps ADMINs away from OWNERs: no OWNER changed, nobody made OWNER; other roles they may change', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    const demoteOwner = await setRole(t.app, admin, project.id, owner.id, 'MEMBER');
    expect(demoteOwner.statusCode).toBe(403);
    const makeOwner = await setRole(t.app, admin, project.id, member.id, 'OWNER');
    expect(makeOwner.statusCode).toBe(403);
    expect((await setRole(t.app, admin, project.id, member.id, 'ADMIN')).statusCode).toBe(200);
    expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'OWNER', [admin.id]: 'ADMIN', [member.id]: 'ADMIN' });
  });

  it('refuses a MEMBER (403), answers 404 for a user who is not a member and 422 for a bad role', async () => {
    const { user: owner, project } = await newProject(t.app);
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    expect((await setRole(t.app, member, project.id, member.id, 'ADMIN')).statusCode).toBe(403);
    const stranger = await signUp(t.app);
    const missing = await setRole(t.app, owner, project.id, stranger.id, 'ADMIN');
    expect(missing.statusCode).toBe(404);
    expect((await setRole(t.app, owner, project.id, 'nope', 'ADMIN')).statusCode).toBe(404);
    const bad = await t.app.inject({ method: 'PATCH', url: `/projects/${project.id}/members/${member.id}`, headers: asUser(owner), payload: { role: 'KING' } });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.errors[0].field).toBe('role');
    expect((await rolesOf(t.db, project.id))[member.id]).toBe('MEMBER');
  });
});

describe('DELETE /projects/:id/members/:userId', () => {
  it('lets any member leave, an ADMIN remove a MEMBER, and removes their access at once', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const leaving = await addMember(t.app, owner, project.id, 'MEMBER');
    const removed = await addMember(t.app, owner, project.id, 'MEMBER');
    expect((await removeMember(t.app, leaving, project.id, leaving.id)).statusCode).toBe(204);
    expect((await removeMember(t.app, admin, project.id, removed.id)).statusCode).toBe(204);
    expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'OWNER', [admin.id]: 'ADMIN' });
    const after = await t.app.inject({ method: 'GET', url: '/contacts', headers: { cookie: removed.cookie, 'x-project-id': project.id } });
    expect(after.statusCode).toBe(403);
  });

  it('refuses a MEMBER removing someone else, an ADMIN removing an OWNER, and the last OWNER leaving', async () => {
    const { user: owner, project } = await newProject(t.app);
    const admin = await addMember(t.app, owner, project.id, 'ADMIN');
    const member = await addMember(t.app, owner, project.id, 'MEMBER');
    expect((await removeMember(t.app, member, project.id, admin.id)).statusCode).toBe(403);
    expect((await removeMember(t.app, admin, project.id, owner.id)).statusCode).toBe(403);
    const last = await removeMember(t.app, owner, project.id, owner.id);
    expect(last.statusCode).toBe(409);
    expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'OWNER', [admin.id]: 'ADMIN', [member.id]: 'MEMBER' });
  });

  it('lets an OWNER leave once another OWNER exists', async () => {
    const { user: owner, project } = await newProject(t.app);
    const second = await addMember(t.app, owner, project.id, 'OWNER');
    expect((await removeMember(t.app, owner, project.id, owner.id)).statusCode).toBe(204);
    expect(await rolesOf(t.db, project.id)).toEqual({ [second.id]: 'OWNER' });
  });
});

describe('the last OWNER under concurrency', () => {
  /** Requests of this test waiting for a lock on memberships (its own connection holds one). */
  const waitingOnMemberships = async () => {
    const { rows } = await t.db.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE '%memberships%' AND datname = current_database()",
    );
    return Number(rows[0]?.n ?? 0);
  };

  it('lets exactly one of two OWNERs step down when both do at once', async () => {
    const { user: owner, project } = await newProject(t.app);
    const second = await addMember(t.app, owner, project.id, 'OWNER');
    // Hold the project's memberships so both requests are in flight together before either commits.
    const blocker = await t.db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT 1 FROM memberships WHERE project_id = $1 FOR UPDATE', [project.id]);
      const both = Promise.all([
        setRole(t.app, owner, project.id, owner.id, 'ADMIN'),
        removeMember(t.app, second, project.id, second.id),
      ]);
      await until('both requests waiting on the memberships', async () => (await waitingOnMemberships()) >= 2);
      await blocker.query('COMMIT');
      // The step-down that ran first succeeded (200 or 204); the other found the last OWNER (409).
      const answers = (await both).map((r) => r.statusCode);
      expect(answers.filter((s) => s === 409), JSON.stringify(answers)).toHaveLength(1);
      expect(answers.filter((s) => s === 200 || s === 204)).toHaveLength(1);
    } finally {
      blocker.release();
    }
    const owners = Object.values(await rolesOf(t.db, project.id)).filter((r) => r === 'OWNER');
    expect(owners).toHaveLength(1);
  });
});

it('invites as OWNER only when the inviter is an OWNER', async () => {
  const { user: owner, project } = await newProject(t.app);
  const admin = await addMember(t.app, owner, project.id, 'ADMIN');
  const other = await signUp(t.app);
  const res = await invite(t.app, admin, project.id, other.email, 'OWNER');
  expect(res.statusCode).toBe(403);
  expect(await rolesOf(t.db, project.id)).toEqual({ [owner.id]: 'OWNER', [admin.id]: 'ADMIN' });
});
