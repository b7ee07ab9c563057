import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { OAUTH_PROVIDERS } from '../../db/schema.js';
import { uploadsFeature } from '../uploads/index.js';
import { checkReadiness } from './health.service.js';

const Check = z.enum(['ok', 'failed', 'skipped']);
const ReadyAnswer = z.object({
  status: z.literal('ok'),
  checks: z
    .object({
      database: Check.describe('The database answers'),
      migrations: Check.describe('Every migration this version ships is applied'),
      workers: Check.describe('Each job worker of this process has a heartbeat in the last 30 s; skipped in a ROLE=api process'),
    })
    .describe('What was checked (the same object is in error.details.checks of a 503)'),
});

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

/** Operations endpoints without authentication: liveness, readiness and feature flags. */
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

  r.get('/health/live', {
    config,
    schema: { tags, summary: 'Liveness: 200 while the process serves requests (no database involved)', response: { 200: z.object({ status: z.literal('ok') }) } },
    handler: async () => ({ status: 'ok' as const }),
  });

  r.get('/health/ready', {
    config,
    schema: {
      tags,
      summary: 'Readiness: the database answers, migrations are applied, and this process\'s job workers beat; else 503 naming the failed check',
      response: { 200: ReadyAnswer },
    },
    handler: async () => {
      // SHUTDOWN_DELAY_SECONDS: a load balancer stops sending requests here before the port closes.
      if (deps.stopping?.()) throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'Not ready: the process is shutting down');
      const readiness = await checkReadiness(deps.healthDb ?? deps.db, deps.workers);
      if (!readiness.ready) {
        throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, `Not ready: ${readiness.problem}`, {
          details: {
            checks: readiness.checks,
            ...(readiness.missingMigrations.length > 0 && { missingMigrations: readiness.missingMigrations }),
            ...(readiness.silentWorkers.length > 0 && { silentWorkers: readiness.silentWorkers }),
          },
          cause: readiness.cause,
        });
      }
      return { status: 'ok' as const, checks: readiness.checks };
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
