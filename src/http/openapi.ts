import type { FastifyInstance } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/**
 * OpenAPI 3.1 generated from the routes' zod schemas, served at /openapi.json, with a
 * browsable page at /docs (its routes are public: see buildApp's onRoute hook). Must
 * be registered before the routes it documents.
 */
export async function registerOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Email delivery and audience platform',
        description:
          'Public API (/v1/*) authenticates with `Authorization: Bearer <key>`: the public key (pk_) on POST /v1/track, the secret key (sk_) everywhere else. Dashboard routes also accept the session cookie plus `X-Project-Id`.',
        version: '1',
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'pk_… or sk_… key of a project' },
          session: { type: 'apiKey', in: 'cookie', name: 'session' },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { config: { auth: 'none', rateLimit: false }, schema: { hide: true } }, async () => app.swagger());
}
