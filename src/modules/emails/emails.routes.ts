import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { Email, EmailIdParams } from './emails.schema.js';
import { getEmail } from './emails.service.js';

/** GET /emails/:id (secret key, or session + X-Project-Id): an email's state. */
export async function emailsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/emails/:id', {
    schema: {
      tags: ['Sending'],
      summary: 'One email: status, why it failed or was cancelled, whether its delivery is unconfirmed',
      description: 'The id is one of the `email` values answered by POST /v1/send (or a campaign email\'s id). Another project\'s email is 404.',
      params: EmailIdParams,
      response: { 200: Email },
    },
    handler: async (request) => getEmail(deps.db, projectIdOf(request), request.params.id),
  });
}
