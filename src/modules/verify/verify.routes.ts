import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { VerifyBody, VerifyResponse } from './verify.schema.js';
import { createVerifier } from './verify.service.js';

/** POST /v1/verify (secret key). One verifier, and so one DNS cache, per app. */
export async function verifyRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const verifier = createVerifier({ dns: deps.dns });
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/v1/verify', {
    schema: {
      tags: ['Verify'],
      summary: 'Check an email address (secret key)',
      description:
        'Checks syntax, DNS (MX, A/AAAA of the domain and www.), disposable domains, free-mail providers and typos. ' +
        'A malformed address is answered 200 with valid false and reason invalid_format; a missing, non-string, empty or over-320-character `email` is 422.',
      body: VerifyBody,
      response: { 200: VerifyResponse },
    },
    handler: async (request) => ({ success: true as const, data: await verifier.verify(request.body.email) }),
  });
}
