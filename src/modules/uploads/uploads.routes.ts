import fastifyMultipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { beforeBodyDeadline } from '../../http/body-timeout.js';
import { Roles } from '../../http/context.js';
import { ApiError, ErrorCode, validationError } from '../../http/errors.js';
import { MAX_IMAGE_BYTES } from './image.js';
import { ListUploadsQuery, Upload, UploadIdParams, UploadList, UploadUsage } from './uploads.schema.js';
import { getUsage, listUploads, removeUpload, uploadImage } from './uploads.service.js';

const tags = ['Uploads'];
const config = { roles: Roles.members } as const;

/** The form fields that may carry the image: `image`, and `file` (the name the CSV import uses). */
export const IMAGE_FIELDS = ['image', 'file'] as const;

/** Multipart framing around the file: a Content-Length above the file limit plus this is surely too large. */
const MULTIPART_OVERHEAD = 64 * 1024;

/** 413, and the connection closed after the answer: the rest of the upload is never read. */
const tooLarge = () =>
  new ApiError(413, ErrorCode.PAYLOAD_TOO_LARGE, `The image is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MB`, {
    headers: { connection: 'close' },
    suggestion: 'Scale the image down or compress it (an email image rarely needs more than 1 MB)',
  });

const fieldError = (message: string) => validationError([{ field: 'image', message, code: 'invalid_type' }]);

const isTooLarge = (err: unknown) =>
  typeof err === 'object' && err !== null && (('code' in err && err.code === 'FST_REQ_FILE_TOO_LARGE') || ('statusCode' in err && err.statusCode === 413));

/** The image part of a multipart request, or a 422/413/400 naming what is wrong. */
async function imagePart(request: FastifyRequest): Promise<MultipartFile> {
  if (!request.isMultipart()) throw fieldError('Send the image as multipart/form-data in a field named "image" (or "file")');
  let part: MultipartFile | undefined;
  try {
    part = await request.file();
  } catch (err) {
    if (isTooLarge(err)) throw tooLarge();
    throw new ApiError(400, ErrorCode.BAD_REQUEST, `Malformed multipart body: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!part) throw fieldError('Required: an image file in the multipart field "image" (or "file")');
  if (!IMAGE_FIELDS.some((f) => f === part.fieldname)) {
    part.file.resume();
    throw fieldError(`Expected the image in the field "image" (or "file"), got a file in "${part.fieldname}"`);
  }
  return part;
}

/**
 * The file's bytes, at most MAX_IMAGE_BYTES: reading stops at the first byte over and the 413
 * closes the connection, so the rest of the upload is never read. (Busboy's own `fileSize` limit
 * is one byte higher on purpose: at its limit it only stops passing bytes on and goes on reading
 * the request to its end, so the file stream would end, truncated, only once the client stops.)
 */
async function readImage(part: MultipartFile): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  part.file.once('limit', () => part.file.destroy(tooLarge()));
  try {
    for await (const chunk of part.file) {
      const piece: Buffer = chunk;
      bytes += piece.length;
      if (bytes > MAX_IMAGE_BYTES) throw tooLarge();
      chunks.push(piece);
    }
  } catch (err) {
    part.file.destroy();
    if (isTooLarge(err)) throw tooLarge();
    throw err;
  }
  if (part.file.truncated) throw tooLarge();
  return Buffer.concat(chunks, bytes);
}

/** /uploads* (secret key, or session + X-Project-Id; every member): the project's images (docs/uploads.md). */
export async function uploadsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/uploads', {
    config,
    schema: { tags, summary: 'Cursor list of the project\'s images, newest first', querystring: ListUploadsQuery, response: { 200: UploadList } },
    handler: async (request) => listUploads(deps, projectIdOf(request), request.query),
  });

  r.get('/uploads/usage', {
    config,
    schema: { tags, summary: 'Storage used by the project\'s images, its quota and the largest file accepted', response: { 200: UploadUsage } },
    handler: async (request) => getUsage(deps, projectIdOf(request)),
  });

  r.delete('/uploads/:id', {
    config,
    schema: {
      tags,
      summary: 'Delete an image (204): its URL stops working, also in emails already sent, and its bytes leave the quota at once',
      params: UploadIdParams,
    },
    handler: async (request, reply) => {
      await removeUpload(deps, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });

  // Multipart parsing exists only in this scope, for this one route.
  await app.register(async (scope) => {
    await scope.register(fastifyMultipart, {
      limits: { fileSize: MAX_IMAGE_BYTES + 1, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 20, headerPairs: 100 },
    });
    scope.withTypeProvider<ZodTypeProvider>().post('/uploads/image', {
      config: { ...config, bodyTimeout: 'upload' },
      schema: {
        tags,
        summary: `Upload an image for template bodies (multipart field "image" or "file"; JPEG, PNG, GIF or WebP; at most ${MAX_IMAGE_BYTES / 1024 / 1024} MB)`,
        description:
          'The type is detected from the bytes (SVG and everything else: 422). The image is encoded again without its metadata (EXIF incl. GPS, XMP, ICC, comments), its EXIF orientation applied; animations stay animated. Answers its public URL (`/files/<key>`, cacheable forever). Over the project\'s storage quota: 403 `UPLOAD_QUOTA_EXCEEDED`.',
        consumes: ['multipart/form-data'],
        response: { 201: Upload },
      },
      onRequest: async (request) => {
        const length = Number(request.headers['content-length']);
        if (Number.isFinite(length) && length > MAX_IMAGE_BYTES + MULTIPART_OVERHEAD) throw tooLarge();
      },
      handler: async (request, reply) => {
        const projectId = projectIdOf(request);
        const part = await beforeBodyDeadline(request, imagePart(request));
        const bytes = await beforeBodyDeadline(request, readImage(part));
        const upload = await uploadImage({ ...deps, log: request.log }, { projectId, filename: part.filename, bytes, field: part.fieldname });
        return reply.code(201).send(upload);
      },
    });
  });
}
