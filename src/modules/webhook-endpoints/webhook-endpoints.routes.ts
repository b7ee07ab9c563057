import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { Roles } from '../../http/context.js';
import { endpointSecretBox } from './payload.js';
import {
  CreateWebhookEndpointBody,
  ListDeliveriesQuery,
  MAX_ENDPOINTS_PER_PROJECT,
  TestWebhookResult,
  UpdateWebhookEndpointBody,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointIdParams,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from './webhook-endpoints.schema.js';
import {
  createEndpoint,
  deleteEndpoint,
  type EndpointDeps,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  rotateEndpointSecret,
  testEndpoint,
  updateEndpoint,
} from './webhook-endpoints.service.js';

/**
 * /webhook-endpoints (secret key, or session + X-Project-Id of an OWNER or ADMIN: the secrets
 * sign what the project's systems trust): outgoing delivery-status webhooks (docs/webhooks-outgoing.md).
 */
export async function webhookEndpointsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Webhook endpoints'];
  const config = { roles: Roles.admins };
  const d: EndpointDeps = { db: deps.db, box: endpointSecretBox(deps.config.secret), allowPrivate: deps.config.webhookAllowPrivate };
  const params = WebhookEndpointIdParams;

  r.post('/webhook-endpoints', {
    config,
    schema: {
      tags,
      summary: `Register an endpoint (201, with its secret: shown only here and on rotate-secret; at most ${MAX_ENDPOINTS_PER_PROJECT} per project, 409 past that)`,
      body: CreateWebhookEndpointBody,
      response: { 201: WebhookEndpointWithSecret },
    },
    handler: async (request, reply) => reply.code(201).send(await createEndpoint(d, projectIdOf(request), request.body)),
  });

  r.get('/webhook-endpoints', {
    config,
    schema: { tags, summary: "The project's endpoints (without their secrets)", response: { 200: WebhookEndpointList } },
    handler: async (request) => listEndpoints(deps.db, projectIdOf(request)),
  });

  r.get('/webhook-endpoints/:id', {
    config,
    schema: { tags, summary: 'One endpoint (without its secret)', params, response: { 200: WebhookEndpoint } },
    handler: async (request) => getEndpoint(deps.db, projectIdOf(request), request.params.id),
  });

  r.patch('/webhook-endpoints/:id', {
    config,
    schema: {
      tags,
      summary: 'Change the URL, the event types or enabled (true re-enables a disabled endpoint and clears its failure state)',
      params,
      body: UpdateWebhookEndpointBody,
      response: { 200: WebhookEndpoint },
    },
    handler: async (request) => updateEndpoint(d, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/webhook-endpoints/:id', {
    config,
    schema: { tags, summary: 'Delete an endpoint and its delivery log (204)', params },
    handler: async (request, reply) => {
      await deleteEndpoint(deps.db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });

  r.post('/webhook-endpoints/:id/rotate-secret', {
    config,
    schema: {
      tags,
      summary: 'A new secret (answered once); every later call is signed with it, retries included',
      params,
      response: { 200: WebhookEndpointWithSecret },
    },
    handler: async (request) => rotateEndpointSecret(d, projectIdOf(request), request.params.id),
  });

  r.post('/webhook-endpoints/:id/test', {
    config,
    schema: {
      tags,
      summary: 'Send a signed `webhook.test` event now and answer the outcome (recorded in the delivery log)',
      params,
      response: { 200: TestWebhookResult },
    },
    handler: async (request) => testEndpoint(d, projectIdOf(request), request.params.id),
  });

  r.get('/webhook-endpoints/:id/deliveries', {
    config,
    schema: {
      tags,
      summary: 'The delivery log, newest first (kept 7 days): each event, its attempts, the last answer, the next retry',
      params,
      querystring: ListDeliveriesQuery,
      response: { 200: WebhookDeliveryList },
    },
    handler: async (request) => listDeliveries(deps.db, projectIdOf(request), request.params.id, request.query),
  });
}
