import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { OAUTH_PROVIDERS } from '../../db/schema.js';
import { uploadsFeature } from '../uploads/index.js';

// The field names are the dashboard's (SPEC: /config lists the enabled integrations). Billing has
// no routes yet, so it is reported off whatever the environment says: a feature is advertised
// once it exists.
const PublicConfig = z.object({
  signupEnabled: z.boolean(),
  oauthProviders: z.array(z.enum(['github', 'google'])).describe('OAuth sign-in providers configured (client id and secret both set)'),
  billingEnabled: z.boolean().describe('Stripe billing is on (STRIPE_SECRET_KEY set): checkout, portal, limits, consumption, invoices and monthly sending caps'),
  maxProjectSendingRate: z.number().nullable().describe('The highest sendingRate a project may set, in emails per second (MAX_PROJECT_SENDING_RATE); null: no cap'),
  uploads: z
    .object({
      storage: z.enum(['local', 's3']).describe('Where images are stored: local disk under DATA_DIR, or an S3-compatible bucket (S3_BUCKET)'),
      maxFileBytes: z.int().describe('Largest image one POST /uploads/image accepts'),
      quotaBytes: z.int().describe('Storage per project (UPLOAD_QUOTA_MB)'),
      formats: z.array(z.string()).describe('Accepted image types'),
    })
    .describe('Image uploads for template bodies (POST /uploads/image), always on'),
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
        // Its own reserved connection in the server: the answer holds while requests of others
        // keep every pooled connection busy (docs/operations.md).
        await deps.ping();
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
      oauthProviders: OAUTH_PROVIDERS.filter((p) => deps.config.oauth[p] !== undefined),
      billingEnabled: deps.config.billing !== undefined,
      maxProjectSendingRate: deps.config.maxProjectSendingRate ?? null,
      uploads: uploadsFeature(deps.config),
    }),
  });
}
