import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { AddSuppressionBody, ListSuppressionsQuery, Suppression, SuppressionEmailParams, SuppressionList } from './suppressions.schema.js';
import { addSuppression, listSuppressions, removeSuppression } from './suppressions.service.js';

/** /suppressions (secret key, or session + X-Project-Id): the addresses the project never sends to (docs/suppressions.md). */
export async function suppressionsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Suppressions'];

  r.get('/suppressions', {
    schema: {
      tags,
      summary: 'Cursor list of suppressed addresses, newest first (search by address, filter by reason)',
      querystring: ListSuppressionsQuery,
      response: { 200: SuppressionList },
    },
    handler: async (request) => listSuppressions(deps.db, projectIdOf(request), request.query),
  });

  r.post('/suppressions', {
    schema: {
      tags,
      summary: 'Suppress an address by hand (201 added; 200 with the existing entry when it is already listed)',
      description: 'Every later email to the address (transactional included) is CANCELLED with the reason, and so is one already queued.',
      body: AddSuppressionBody,
      response: { 200: Suppression, 201: Suppression },
    },
    handler: async (request, reply) => {
      const { suppression, created } = await addSuppression(deps.db, projectIdOf(request), request.body);
      return reply.code(created ? 201 : 200).send(suppression);
    },
  });

  r.delete('/suppressions/:email', {
    schema: {
      tags,
      summary: 'Remove an address from the list (204); later emails to it are delivered again',
      params: SuppressionEmailParams,
    },
    handler: async (request, reply) => {
      await removeSuppression(deps.db, projectIdOf(request), request.params.email);
      return reply.code(204).send();
    },
  });
}
