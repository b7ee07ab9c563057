import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { Db } from '../../../src/db/connection.js';
import { hashPassword, insertUser } from '../../../src/modules/accounts/index.js';
import { sessionCookie, type SignedInUser, signUp, uniqueEmail } from '../../helpers/accounts.js';

export type Role = 'OWNER' | 'ADMIN' | 'MEMBER';

export const asUser = (user: SignedInUser) => ({ cookie: user.cookie });

export function invite(app: FastifyInstance, by: SignedInUser, projectId: string, email: string, role: Role = 'MEMBER') {
  return app.inject({ method: 'POST', url: `/projects/${projectId}/members`, headers: asUser(by), payload: { email, role } });
}

export function setRole(app: FastifyInstance, by: SignedInUser, projectId: string, userId: string, role: Role) {
  return app.inject({ method: 'PATCH', url: `/projects/${projectId}/members/${userId}`, headers: asUser(by), payload: { role } });
}

export function removeMember(app: FastifyInstance, by: SignedInUser, projectId: string, userId: string) {
  return app.inject({ method: 'DELETE', url: `/projects/${projectId}/members/${userId}`, headers: asUser(by) });
}

/** A new signed-in user added to the project with `role` by `owner` (an existing account joins at once). */
export async function addMember(app: FastifyInstance, owner: SignedInUser, projectId: string, role: Role): Promise<SignedInUser> {
  const user = await signUp(app);
  const res = await invite(app, owner, projectId, user.email, role);
  expect(res.statusCode, res.body).toBe(201);
  expect(res.json()).toMatchObject({ status: 'ADDED', member: { userId: user.id, role } });
  return user;
}

/** The roles of the project's members, by user id (from the rows). */
export async function rolesOf(db: Db, projectId: string): Promise<Record<string, Role>> {
  const rows = await db.db.selectFrom('memberships').select(['user_id', 'role']).where('project_id', '=', projectId).execute();
  return Object.fromEntries(rows.map((r) => [r.user_id, r.role]));
}

/** The token of the latest invitation email queued to `email` (its link `…/app/invitations?token=…`). */
export async function invitationToken(db: Db, email: string): Promise<{ token: string; link: string; text: string; html: string }> {
  const row = await db.db
    .selectFrom('emails')
    .select(['text', 'html'])
    .where('to_email', '=', email)
    .where('source', '=', 'SYSTEM')
    .where('system_kind', '=', 'invitation')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  const link = /(\S+\/app\/invitations\?token=([A-Za-z0-9_-]+))/.exec(row.text ?? '');
  if (!link?.[1] || !link[2]) throw new Error(`no invitation link in: ${row.text}`);
  return { token: link[2], link: link[1], text: row.text ?? '', html: row.html ?? '' };
}

/**
 * An account created straight in the database (not through sign-up, which may accept
 * invitations itself), verified or not, then signed in through POST /auth/login.
 */
export async function accountThenLogin(app: FastifyInstance, db: Db, opts: { email?: string; verified: boolean }): Promise<{ user: SignedInUser; status: number }> {
  const email = opts.email ?? uniqueEmail();
  const password = 'correct horse battery';
  const row = await insertUser(db.db, { email, passwordHash: await hashPassword(password), isAdmin: false });
  await db.db.updateTable('users').set({ email_verified_at: opts.verified ? new Date() : null }).where('id', '=', row.id).execute();
  const res = await app.inject({ method: 'POST', url: '/auth/login', payload: { email, password } });
  return { user: { id: row.id, email, password, cookie: res.statusCode === 200 ? sessionCookie(res.headers['set-cookie']) : '' }, status: res.statusCode };
}
