import { randomUUID } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler } from 'fastify-type-provider-zod';
import type { AppDeps } from './app-deps.js';
import type { ProjectRole } from './db/schema.js';
import { authPlugin } from './http/auth.js';
import { bodyTimeoutPlugin, clientErrorHandler, serverRequestTimeoutMs } from './http/body-timeout.js';
import { AuthMode } from './http/context.js';
import { corsPlugin } from './http/cors.js';
import { registerDashboard } from './http/dashboard.js';
import { frameworkErrorHandler, registerErrorHandling } from './http/error-handler.js';
import { idempotencyPlugin } from './http/idempotency.js';
import { registerRequestMetrics } from './http/metrics.js';
import { registerOpenApi } from './http/openapi.js';
import { rewritePublicApiUrl } from './http/plunk-paths.js';
import { rateLimitPlugin, type RateLimitStore } from './http/rate-limit.js';
import { textRulesPlugin } from './http/text-rules.js';
import { registerUnmatched } from './http/unmatched.js';
import { validatorCompiler } from './http/validation.js';
import { RequestLogController, requestLoggerFactory, serializeRequest } from './http/request-log.js';
import { accountsRoutes } from './modules/accounts/index.js';
import { activityRoutes } from './modules/activity/index.js';
import { analyticsRoutes } from './modules/analytics/index.js';
import { billingRoutes, billingSetupStateReader } from './modules/billing/index.js';
import { campaignsRoutes } from './modules/campaigns/index.js';
import { contactExportRoutes, contactJobsRoutes, contactsRoutes, fieldsRoutes } from './modules/contacts/index.js';
import { domainsRoutes } from './modules/domains/index.js';
import { inboundMailRoutes } from './modules/bounces/index.js';
import { emailsRoutes, sendRoutes } from './modules/emails/index.js';
import { eventsRoutes, trackRoutes } from './modules/events/index.js';
import { type OAuthEndpointOverrides, oauthRoutes } from './modules/oauth/index.js';
import { membersRoutes } from './modules/members/index.js';
import { projectsRoutes } from './modules/projects/index.js';
import { securityRoutes } from './modules/security/index.js';
import { segmentsRoutes } from './modules/segments/index.js';
import { suppressionsRoutes } from './modules/suppressions/index.js';
import { metricsRoutes, systemRoutes } from './modules/system/index.js';
import { templatesRoutes } from './modules/templates/index.js';
import { trackingRoutes } from './modules/tracking/index.js';
import { filesRoutes, uploadsRoutes } from './modules/uploads/index.js';
import { verifyRoutes } from './modules/verify/index.js';
import { webhookEndpointsRoutes } from './modules/webhook-endpoints/index.js';
import { webhooksRoutes } from './modules/webhooks/index.js';
import { executionsRoutes, workflowsRoutes } from './modules/workflows/index.js';

/** One registered route and its declared authentication. */
export interface RouteSummary {
  method: string;
  url: string;
  auth: AuthMode;
  /** `config.roles`: the project roles allowed (tests walk it for the permission matrix). */
  roles?: readonly ProjectRole[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered so far (tests walk it to check rules that hold for all routes). */
    routeCatalog: RouteSummary[];
  }
}

/** Longest path parameter the router matches (decoded); longer ones are a 414 in the envelope. */
export const MAX_PATH_PARAM_LENGTH = 1024;

/** Default body limit; routes that take attachments or uploads raise their own. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface BuildAppOptions {
  /** The process logger; none when omitted (tests). */
  logger?: FastifyBaseLogger;
  rateLimitStore: RateLimitStore;
  /** Tests only: OAuth provider endpoints on loopback (a fake provider); never set by the server. */
  oauthEndpoints?: OAuthEndpointOverrides;
}

/** Headers and body fields that never reach a log line. */
export const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.secret',
];

/**
 * What the API and the METRICS_PORT listener share: the catalog of their routes (404 and 405
 * answers name what exists; `defaultAuth` for routes that declare none), zod validation and
 * serialisation, X-Request-Id, the error envelope and request metrics. Returns the catalog.
 */
function registerBasics(app: FastifyInstance, defaultAuth: AuthMode): RouteSummary[] {
  const routes: RouteSummary[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      if (method !== 'HEAD') routes.push({ method, url: route.url, auth: route.config?.auth ?? defaultAuth, roles: route.config?.roles });
    }
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Hooks that never wait take `done` rather than returning a promise: one less per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
  registerErrorHandling(app);
  registerUnmatched(app, () => routes);
  registerRequestMetrics(app);
  return routes;
}

/** Registers plugins and modules; nothing else. The caller listens (or injects). */
export async function buildApp(deps: AppDeps, opts: BuildAppOptions): Promise<FastifyInstance> {
  const bodyTimeouts = { bodyMs: deps.config.bodyTimeoutSeconds * 1000, uploadMs: deps.config.uploadTimeoutSeconds * 1000 };
  const app = Fastify({
    // The request serializer redacts tokens and search terms from logged URLs, whatever logger is passed.
    ...(opts.logger ? { loggerInstance: opts.logger.child({}, { serializers: { req: serializeRequest } }) } : { logger: false }),
    // Each request's logger without a pino child per request (request-log.ts).
    ...(opts.logger && { childLoggerFactory: requestLoggerFactory }),
    genReqId: () => randomUUID(),
    logController: new RequestLogController({ requestIdLogLabel: 'requestId' }),
    bodyLimit: DEFAULT_BODY_LIMIT,
    // Slow clients: per-route body deadlines (body-timeout.ts), Node's own limits behind them.
    requestTimeout: serverRequestTimeoutMs(bodyTimeouts),
    http: { headersTimeout: bodyTimeouts.bodyMs, connectionsCheckingInterval: 1000 },
    clientErrorHandler,
    trustProxy: false,
    // Path parameters hold emails and event names (up to 255 characters; find-my-way's default is 100).
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: frameworkErrorHandler,
    rewriteUrl: (req) => rewritePublicApiUrl(req.url),
  });
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) {
      // The docs page's own routes (registered by @fastify/swagger-ui) are public.
      route.config = { ...route.config, auth: AuthMode.none, rateLimit: false };
      route.schema = { ...route.schema, hide: true };
    }
  });
  app.decorate('routeCatalog', registerBasics(app, AuthMode.secret));
  await app.register(bodyTimeoutPlugin, bodyTimeouts);

  await registerOpenApi(app, deps.config.publicUrl);
  await app.register(corsPlugin);
  await app.register(fastifyCookie);
  await app.register(authPlugin, { db: deps.db, sessions: deps.sessions, keyCache: deps.keyCache });
  await app.register(rateLimitPlugin, {
    limit: deps.config.rateLimitPerMinute,
    ipLimit: deps.config.signinRateLimitPerMinute,
    store: opts.rateLimitStore,
  });
  await app.register(idempotencyPlugin, { db: deps.db, ttlHours: deps.config.idempotencyTtlHours });
  await app.register(textRulesPlugin);

  await app.register(systemRoutes, deps);
  await app.register(metricsRoutes, deps);
  await app.register(accountsRoutes, deps);
  await app.register(oauthRoutes, { deps, endpoints: opts.oauthEndpoints });
  await app.register(projectsRoutes, deps);
  await app.register(membersRoutes, deps);
  await app.register(trackRoutes, deps);
  await app.register(contactsRoutes, deps);
  await app.register(fieldsRoutes, deps);
  await app.register(contactJobsRoutes, deps);
  await app.register(contactExportRoutes, deps);
  await app.register(eventsRoutes, deps);
  await app.register(activityRoutes, deps);
  await app.register(analyticsRoutes, deps);
  await app.register(domainsRoutes, deps);
  await app.register(inboundMailRoutes, deps);
  await app.register(templatesRoutes, deps);
  await app.register(sendRoutes, deps);
  await app.register(emailsRoutes, deps);
  await app.register(verifyRoutes, deps);
  await app.register(trackingRoutes, deps);
  await app.register(webhooksRoutes, deps);
  await app.register(segmentsRoutes, deps);
  await app.register(campaignsRoutes, deps);
  await app.register(suppressionsRoutes, deps);
  await app.register(workflowsRoutes, deps);
  await app.register(executionsRoutes, deps);
  await app.register(webhookEndpointsRoutes, deps);
  await app.register(securityRoutes, { ...deps, billingState: billingSetupStateReader(deps.config.billing) });
  await app.register(billingRoutes, deps);
  await app.register(uploadsRoutes, deps);
  await app.register(filesRoutes, deps);
  await registerDashboard(app, deps.config.dashboardDist);
  return app;
}

/**
 * The listener of METRICS_PORT (docs/operations.md "Metrics and health"): GET /metrics and the
 * /health routes only, with the same access rules and error envelope, for processes without the
 * API (ROLE=worker) and for scrapers kept off the public port.
 */
export async function buildOpsApp(deps: AppDeps, opts: { logger?: FastifyBaseLogger } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    genReqId: () => randomUUID(),
    trustProxy: false,
    routerOptions: { ignoreTrailingSlash: true },
  });
  registerBasics(app, AuthMode.none);
  await app.register(systemRoutes, deps);
  await app.register(metricsRoutes, deps);
  return app;
}
