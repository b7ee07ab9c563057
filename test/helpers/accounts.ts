import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

export interface TestProject {
  id: string;
  name: string;
  public: string;
  secret: string;
  role: string;
  disabled: boolean;
  tracking: string;
  createdAt: string;
  updatedAt: string;
}

export interface SignedInUser {
  id: string;
  email: string;
  password: string;
  cookie: string;
}

export const uniqueEmail = (tag = 'user') => `${tag}-${randomUUID()}@example.com`;

/** The `session=…` pair of a response's Set-Cookie, for the next request's Cookie header. */
export function sessionCookie(setCookie: string | string[] | undefined): string {
  const all = Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : [];
  const found = all.find((c) => c.startsWith('session='));
  if (!found) throw new Error('no session cookie set');
  return found.split(';')[0] ?? '';
}

export async function signUp(app: FastifyInstance, email = uniqueEmail(), password = 'correct horse battery'): Promise<SignedInUser> {
  const res = await app.inject({ method: 'POST', url: '/auth/signup', payload: { email, password } });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json<{ id: string }>().id, email, password, cookie: sessionCookie(res.headers['set-cookie']) };
}

export async function createProject(app: FastifyInstance, user: SignedInUser, name = 'Test project'): Promise<TestProject> {
  const res = await app.inject({ method: 'POST', url: '/users/@me/projects', headers: { cookie: user.cookie }, payload: { name } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json<TestProject>();
}

/** A fresh user with a fresh project: the unit of isolation between tests. */
export async function newProject(app: FastifyInstance): Promise<{ user: SignedInUser; project: TestProject }> {
  const user = await signUp(app);
  return { user, project: await createProject(app, user) };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
