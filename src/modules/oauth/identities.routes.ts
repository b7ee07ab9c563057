import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { OAUTH_PROVIDERS } from '../../db/schema.js';
import { ApiError, ErrorCode, notFound } from '../../http/errors.js';
import { PROVIDER_LABELS } from './oauth.providers.js';
import { listIdentities } from './oauth.repo.js';
import { IdentityParams, LinkedIdentity } from './oauth.schema.js';
import { unlinkProvider } from './oauth.service.js';

/** The signed-in user's linked sign-in providers (account settings): list and unlink. */
export async function identitiesRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Accounts'];
  const config = { auth: 'user' } as const;
  const userIdOf = (user: { id: string } | undefined): string => {
    if (!user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Not signed in: log in with POST /auth/login');
    return user.id;
  };

  r.get('/users/@me/oauth-identities', {
    config,
    schema: { tags, summary: 'The sign-in providers linked to your account', response: { 200: z.array(LinkedIdentity) } },
    handler: async (request) =>
      (await listIdentities(deps.db, userIdOf(request.user))).map((i) => ({
        provider: i.provider,
        email: i.email,
        linkedAt: i.created_at.toISOString(),
        lastSignInAt: i.last_sign_in_at.toISOString(),
      })),
  });

  r.delete('/users/@me/oauth-identities/:provider', {
    config,
    schema: {
      tags,
      summary: 'Unlink a sign-in provider; 409 when it is the only way left to sign in (no password, no other provider)',
      params: IdentityParams,
    },
    handler: async (request, reply) => {
      const provider = OAUTH_PROVIDERS.find((p) => p === request.params.provider);
      if (!provider) throw notFound(`OAuth provider "${request.params.provider}"`);
      await unlinkProvider(deps.db, { userId: userIdOf(request.user), provider, label: PROVIDER_LABELS[provider] });
      return reply.code(204).send();
    },
  });
}
