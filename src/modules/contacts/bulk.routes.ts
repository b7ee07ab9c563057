import fastifyMultipart from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode, validationError } from '../../http/errors.js';
import { BulkBody, JobAccepted, JobIdParams, JobStatusBody } from './bulk.schema.js';
import { BULK_STATUS_KINDS, type BulkKind, getJobStatus, queueBulkJob } from './bulk.service.js';
import { projectIdOf } from '../../http/auth.js';
import { beforeBodyDeadline } from '../../http/body-timeout.js';
import { MAX_IMPORT_BYTES, storeImportUpload, tooLarge } from './import.upload.js';
import { JobKind } from './jobs.repo.js';

const tags = ['Contacts'];

/** Multipart framing around the file: a Content-Length above the file limit plus this is surely too large. */
const MULTIPART_OVERHEAD = 64 * 1024;

const BULK_PATHS: readonly { path: string; kind: BulkKind; summary: string }[] = [
  { path: '/contacts/bulk-subscribe', kind: JobKind.bulkSubscribe, summary: 'Subscribe up to 1,000 contacts (queued)' },
  { path: '/contacts/bulk-unsubscribe', kind: JobKind.bulkUnsubscribe, summary: 'Unsubscribe up to 1,000 contacts (queued)' },
  { path: '/contacts/bulk-delete', kind: JobKind.bulkDelete, summary: 'Delete up to 1,000 contacts and their events (queued)' },
];

/** POST /contacts/bulk-*, GET /contacts/bulk/:jobId, and the CSV import routes. */
export async function contactJobsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();

  for (const { path, kind, summary } of BULK_PATHS) {
    r.post(path, {
      schema: { tags, summary, body: BulkBody, response: { 202: JobAccepted } },
      handler: async (request, reply) => {
        const jobId = await queueBulkJob(deps.db, { projectId: projectIdOf(request), kind, contactIds: request.body.contactIds });
        return reply.code(202).send({ jobId });
      },
    });
  }

  r.get('/contacts/bulk/:jobId', {
    schema: { tags, summary: 'Status of a bulk job (bulk-* and queued field deletes)', params: JobIdParams, response: { 200: JobStatusBody } },
    handler: async (request) =>
      getJobStatus(deps.db, { projectId: projectIdOf(request), jobId: request.params.jobId, kinds: BULK_STATUS_KINDS }),
  });

  r.get('/contacts/import/:jobId', {
    schema: { tags, summary: 'Status of a CSV import', params: JobIdParams, response: { 200: JobStatusBody } },
    handler: async (request) =>
      getJobStatus(deps.db, { projectId: projectIdOf(request), jobId: request.params.jobId, kinds: [JobKind.import] }),
  });

  // Multipart parsing exists only in this scope, for this one route. Busboy's `fileSize` is one
  // byte over the limit on purpose: the receipt refuses that byte and closes the connection,
  // whereas at its own limit busboy only stops passing bytes on and reads the request to its end.
  await app.register(async (scope) => {
    await scope.register(fastifyMultipart, {
      limits: { fileSize: MAX_IMPORT_BYTES + 1, files: 1, fields: 10, parts: 20, headerPairs: 100 },
    });
    scope.withTypeProvider<ZodTypeProvider>().post('/contacts/import', {
      schema: {
        tags,
        summary: 'Import contacts from a CSV file (multipart field "file", at most 5 MB; queued)',
        description:
          'Header row required with an `email` column (any case); optional `subscribed` column (true/false, yes/no, 1/0; empty = default); every other column becomes contact data (as strings). Poll GET /contacts/import/:jobId.',
        consumes: ['multipart/form-data'],
        response: { 202: JobAccepted },
      },
      // The file gets UPLOAD_TIMEOUT_SECONDS to arrive; it is received in full before any SQL.
      config: { bodyTimeout: 'upload' },
      onRequest: async (request) => {
        const length = Number(request.headers['content-length']);
        if (Number.isFinite(length) && length > MAX_IMPORT_BYTES + MULTIPART_OVERHEAD) throw tooLarge();
      },
      handler: async (request, reply) => {
        const projectId = projectIdOf(request);
        const file = await beforeBodyDeadline(request, uploadedFile(request));
        const jobId = await storeImportUpload(deps.db, {
          projectId,
          file: { filename: file.filename, stream: file.file, truncated: () => file.file.truncated },
          signal: request.bodyDeadline,
        });
        return reply.code(202).send({ jobId });
      },
    });
  });
}

const fileMissing = (message: string) => validationError([{ field: 'file', message, code: 'invalid_type' }]);

/** The `file` part of a multipart request, or a 422/413 naming what is wrong. */
async function uploadedFile(request: FastifyRequest) {
  if (!request.isMultipart()) throw fileMissing('Send the CSV as multipart/form-data in a field named "file"');
  let part;
  try {
    part = await request.file();
  } catch (err) {
    if (err instanceof Error && 'statusCode' in err && err.statusCode === 413) throw tooLarge();
    throw new ApiError(400, ErrorCode.BAD_REQUEST, `Malformed multipart body: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!part) throw fileMissing('Required: a CSV file in the multipart field "file"');
  if (part.fieldname !== 'file') {
    part.file.resume();
    throw fileMissing(`Expected the CSV file in the field "file", got a file in "${part.fieldname}"`);
  }
  return part;
}
