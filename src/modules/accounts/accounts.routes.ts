import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { findUserById, rowToUser } from './accounts.repo.js';
import { LoginBody, SignupBody, User } from './accounts.schema.js';
import { login, signup } from './accounts.service.js';

export async function accountsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Accounts'];

  r.post('/auth/signup', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: { tags, summary: 'Create an account and sign in', body: SignupBody, response: { 201: User } },
    handler: async (request, reply) => {
      const user = await signup(deps.db, { ...request.body, signupEnabled: deps.config.signupEnabled });
      await deps.sessions.issue(reply, user.id);
      return reply.code(201).send(rowToUser(user));
    },
  });

  r.post('/auth/login', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: { tags, summary: 'Sign in with email and password; sets the session cookie', body: LoginBody, response: { 200: User } },
    handler: async (request, reply) => {
      const user = await login(deps.db, request.body);
      await deps.sessions.issue(reply, user.id);
      return rowToUser(user);
    },
  });

  r.get('/auth/logout', {
    config: { auth: 'none' },
    schema: { tags, summary: 'Clear the session cookie', response: { 200: z.object({ success: z.literal(true) }) } },
    handler: async (_request, reply) => {
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
}
