import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { Roles } from '../../http/context.js';
import { ExportQuery, ExportResponse } from './export.schema.js';
import { DEFAULT_EXPORT_LIMITS, type ExportLimits, exportGate, startContactExport } from './export.service.js';

/** Options of {@link contactExportRoutes}: the limits default to DEFAULT_EXPORT_LIMITS. */
export interface ContactExportRoutesOptions extends AppDeps {
  exportLimits?: Partial<ExportLimits>;
}

/**
 * GET /contacts/export (secret key, or session + X-Project-Id; every member, as GET /contacts):
 * the project's contacts, a segment's or a condition's, streamed as CSV or NDJSON (docs/export.md).
 */
export async function contactExportRoutes(app: FastifyInstance, opts: ContactExportRoutesOptions): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const limits: ExportLimits = { ...DEFAULT_EXPORT_LIMITS, ...opts.exportLimits };
  const gate = exportGate(limits.perProcess);

  r.get('/contacts/export', {
    // A HEAD would run the whole export to throw its body away.
    exposeHeadRoute: false,
    config: { auth: 'secret', roles: Roles.members },
    schema: {
      tags: ['Contacts'],
      summary: 'Export contacts (all, a segment\'s or a condition\'s) as a CSV or NDJSON file, streamed',
      description:
        'Every check (segment 404, condition 422, the limits: 429 two exports of the project running, 503 the server streaming its maximum) ' +
        'is answered before the first byte. One consistent snapshot: the header and every row are from the moment the export starts.',
      querystring: ExportQuery,
      response: { 200: ExportResponse },
    },
    handler: async (request, reply) => {
      const started = Date.now();
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      let exported;
      try {
        exported = await startContactExport(opts.db, { projectId: projectIdOf(request), query: request.query, limits, gate, signal: gone.signal });
      } catch (err) {
        if (!gone.signal.aborted) throw err;
        request.log.info('contact export: the client went away before the first byte');
        return reply.hijack();
      }
      const { stream, filename, contentType } = exported;
      stream.once('close', () => {
        const outcome = { format: request.query.format, rows: stream.rows, ms: Date.now() - started, complete: stream.readableEnded };
        request.log.info(outcome, 'contact export');
      });
      // The file is a stream: the reply untyped by the documented (string) answer.
      const plain: FastifyReply = reply;
      return plain
        .header('content-type', contentType)
        .header('content-disposition', `attachment; filename="${filename}"`)
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .send(stream);
    },
  });
}
