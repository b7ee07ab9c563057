import type { FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { finishDocument } from './openapi-document.js';
import { decorateOperation, Scheme } from './openapi-operations.js';
import type { JsonObject } from './openapi-components.js';
import { SESSION_COOKIE } from './session.js';

/**
 * OpenAPI 3.1 generated from the routes' zod schemas, served at /openapi.json, with a
 * browsable page at /docs (its routes are public: see buildApp's onRoute hook). Each
 * operation's security, error answers and operationId are derived from the route's own
 * declarations (openapi-operations.ts, openapi-document.ts), so "Authorize" in /docs sends
 * what auth.ts checks. Must be registered before the routes it documents.
 */
export async function registerOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Email delivery and audience platform',
        description:
          'Public API (/v1/*) authenticates with `Authorization: Bearer <key>`: the public key (pk_) on POST /v1/track, the secret key (sk_) everywhere else. ' +
          'Project routes also accept the session cookie plus `X-Project-Id`. In this page: enter the keys under Authorize; for the cookie, sign in with POST /auth/login here first (the browser then sends it) and enter the project id.',
        version: '1',
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          [Scheme.publicKey]: { type: 'http', scheme: 'bearer', description: 'The project\'s public key (pk_…): POST /v1/track only' },
          [Scheme.secretKey]: { type: 'http', scheme: 'bearer', description: 'The project\'s secret key (sk_…)' },
          [Scheme.session]: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'Set by POST /auth/login or /auth/signup' },
          [Scheme.projectId]: { type: 'apiKey', in: 'header', name: 'X-Project-Id', description: 'The project a session request acts on (with the session cookie)' },
        },
      },
    },
    transform: (input) => {
      const out = jsonSchemaTransform(input);
      if ((out.schema as JsonObject | undefined)?.hide === true) return out;
      return { ...out, schema: decorateOperation(input.route, out.schema as JsonObject | undefined) };
    },
    transformObject: (input) => finishDocument(jsonSchemaTransformObject(input) as JsonObject),
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { config: { auth: 'none', rateLimit: false }, schema: { hide: true } }, async () => app.swagger());
}
