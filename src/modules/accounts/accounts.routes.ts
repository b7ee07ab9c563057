import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { SESSION_COOKIE } from '../../http/session.js';
import { acceptPendingInvitations } from '../members/index.js';
import { findUserById, rowToUser } from './accounts.repo.js';
import { LoginBody, SignupBody, User } from './accounts.schema.js';
import { login, logout, signup } from './accounts.service.js';
import { createLoginThrottle } from './login-throttle.js';
import { emailFlowsRoutes } from './email-flows.routes.js';

export async function accountsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Accounts'];
  const throttle = createLoginThrottle(deps.db);

  r.post('/auth/signup', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Create an account and sign in',
      description:
        'A new address gets its user and the session cookie. An address that already has an account gets the same 201 ' +
        'and body shape but no account change and no session (docs/accounts.md), so signup does not reveal who has an account.',
      body: SignupBody,
      response: { 201: User },
    },
    handler: async (request, reply) => {
      const { created, user } = await signup(deps.db, {
        ...request.body,
        signupEnabled: deps.config.signupEnabled,
        verification: deps.config.smtpUrl ? { publicUrl: deps.config.publicUrl } : undefined,
      });
      if (created) {
        await deps.sessions.issue(reply, created.id);
        await acceptPendingInvitations(deps.db, { userId: created.id, email: created.email, emailVerified: created.email_verified_at !== null });
      }
      return reply.code(201).send(user);
    },
  });

  r.post('/auth/login', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Sign in with email and password; sets the session cookie',
      description: 'After 5 failed attempts for one email, each further failure locks it for twice as long (1 s up to 15 min): 429 with Retry-After.',
      body: LoginBody,
      response: { 200: User },
    },
    handler: async (request, reply) => {
      const user = await login(deps.db, throttle, request.body);
      await deps.sessions.issue(reply, user.id);
      await acceptPendingInvitations(deps.db, { userId: user.id, email: user.email, emailVerified: user.email_verified_at !== null });
      return rowToUser(user);
    },
  });

  // GET (SPEC) and POST: a client may log out either way; both end the session server-side.
  r.route({
    method: ['GET', 'POST'],
    url: '/auth/logout',
    config: { auth: 'none' },
    schema: { tags, summary: 'End the session and clear its cookie', response: { 200: z.object({ success: z.literal(true) }) } },
    handler: async (request, reply) => {
      const token = request.cookies[SESSION_COOKIE];
      await logout(deps.db, token ? await deps.sessions.verify(token) : undefined);
      deps.sessions.clear(reply);
      return { success: true as const };
    },
  });

  r.get('/users/@me', {
    config: { auth: 'user' },
    schema: { tags, summary: 'The signed-in user', response: { 200: User } },
    handler: async (request) => {
      const user = request.user && (await findUserById(deps.db, request.user.id));
      if (!user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'This account no longer exists; sign in again');
      return rowToUser(user);
    },
  });

  await emailFlowsRoutes(app, deps);
}
