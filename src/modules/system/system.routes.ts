import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { sql } from 'kysely';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';

const PublicConfig = z.object({
  signupEnabled: z.boolean(),
  oauthProviders: z.array(z.enum(['github', 'google'])),
  billingEnabled: z.boolean(),
});

/** Operations endpoints without authentication: readiness and feature flags. */
export async function systemRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const config = { auth: 'none', rateLimit: false } as const;
  const tags = ['System'];

  r.get('/health', {
    config,
    schema: { tags, summary: 'Readiness: 200 once migrations ran and the database answers', response: { 200: z.object({ status: z.literal('ok') }) } },
    handler: async () => {
      try {
        await sql`SELECT 1`.execute(deps.db);
      } catch (err) {
        throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'The database is not answering', { cause: err });
      }
      return { status: 'ok' as const };
    },
  });

  r.get('/config', {
    config,
    schema: { tags, summary: 'Feature flags of this instance', response: { 200: PublicConfig } },
    handler: async () => ({
      signupEnabled: deps.config.signupEnabled,
      oauthProviders: (['github', 'google'] as const).filter((p) => deps.config.oauth[p] !== undefined),
      billingEnabled: deps.config.stripe !== undefined,
    }),
  });
}
