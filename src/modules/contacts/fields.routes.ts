import { projectIdOf } from '../../http/auth.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { JobAccepted } from './bulk.schema.js';
import { createFieldsCache } from './fields.cache.js';
import { FieldParams, FieldsList, FieldUsage, ValuesPage, ValuesQuery } from './fields.schema.js';
import { deleteField, fieldUsage, listFields, listFieldValues } from './fields.service.js';

/** Options of {@link fieldsRoutes}. */
export interface FieldsRoutesOptions extends AppDeps {
  /** Above this many contacts having the key, a field delete is a queued job. Default 10,000. */
  fieldDeleteJobThreshold?: number;
  /** GET /contacts/fields is exact up to this many contacts, estimated from a sample above. Default 50,000. */
  fieldsExactUpTo?: number;
  /** Contacts sampled above `fieldsExactUpTo`. Default 20,000. */
  fieldsSample?: number;
  /** How long a sampled answer is reused (a field delete drops it at once). Default 60,000 ms. */
  fieldsCacheTtlMs?: number;
}

export async function fieldsRoutes(app: FastifyInstance, opts: FieldsRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Contacts'];
  const cache = createFieldsCache(opts.fieldsCacheTtlMs ?? 60_000);
  const listOptions = { exactUpTo: opts.fieldsExactUpTo, sample: opts.fieldsSample, cache };

  r.get('/contacts/fields', {
    schema: {
      tags,
      summary: 'Standard fields and every data key of the project, with inferred type and coverage',
      response: { 200: FieldsList },
    },
    handler: async (request) => listFields(opts.db, projectIdOf(request), listOptions),
  });

  r.get('/contacts/fields/:field/values', {
    schema: {
      tags,
      summary: 'Distinct values of a data field with their counts, most frequent first (page list)',
      params: FieldParams,
      querystring: ValuesQuery,
      response: { 200: ValuesPage },
    },
    handler: async (request) =>
      listFieldValues(opts.db, { projectId: projectIdOf(request), field: request.params.field, ...request.query }),
  });

  r.get('/contacts/fields/:field/usage', {
    schema: {
      tags,
      summary: 'Segments, campaigns, templates and workflows referencing a field',
      params: FieldParams,
      response: { 200: FieldUsage },
    },
    handler: async (request) => fieldUsage(opts.db, projectIdOf(request), request.params.field),
  });

  r.delete('/contacts/fields/:field', {
    schema: {
      tags,
      summary: 'Remove a data field from every contact: 204 when done at once, 202 {jobId} when queued (poll GET /contacts/bulk/:jobId)',
      params: FieldParams,
      response: { 202: JobAccepted, 204: z.void().describe('Removed at once') },
    },
    handler: async (request, reply) => {
      const queued = await deleteField(opts.db, {
        projectId: projectIdOf(request),
        field: request.params.field,
        jobThreshold: opts.fieldDeleteJobThreshold,
      });
      cache.invalidate(projectIdOf(request));
      return queued ? reply.code(202).send(queued) : reply.code(204).send();
    },
  });
}
