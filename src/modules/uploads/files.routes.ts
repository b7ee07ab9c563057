import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { notFound } from '../../http/errors.js';
import { CONTENT_TYPE_OF_EXT } from './image.js';
import { IMMUTABLE_CACHE, isStorageKey, type ObjectInfo } from './storage.js';
import { uploadStorage } from './storage-of.js';
import { FileKeyParams } from './uploads.schema.js';

/**
 * Headers of every served image. `nosniff`: browsers take the Content-Type as given, never guess
 * another. The CSP (no scripts, no plugins, a sandbox) is defence in depth should a file ever be
 * opened as a page; CORP lets any site embed the image.
 */
const FILE_HEADERS = {
  'cache-control': IMMUTABLE_CACHE,
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; sandbox",
  'cross-origin-resource-policy': 'cross-origin',
};

/** Strong ETag: a key is never reused for other bytes, so the key names the content. */
const etagOf = (key: string) => `"${key}"`;

/** Whether If-None-Match names this ETag (or `*`); weak comparison, as RFC 9110 requires for it. */
function matchesIfNoneMatch(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  if (!header) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t.replace(/^W\//, '') === etag;
  });
}

function headersOf(key: string, info: ObjectInfo): Record<string, string> {
  const ext = key.slice(key.lastIndexOf('.') + 1);
  return { ...FILE_HEADERS, 'content-type': CONTENT_TYPE_OF_EXT[ext] ?? 'application/octet-stream', 'content-length': String(info.size), etag: etagOf(key) };
}

const notModified = (reply: FastifyReply, key: string) =>
  reply.code(304).headers({ ...FILE_HEADERS, etag: etagOf(key) }).send();

/**
 * GET and HEAD /files/:key (no authentication, not rate-limited: images in emails are fetched by
 * every recipient's mail client or image proxy). Anything that is not a well-formed key is a 404
 * before storage is asked, so no path can be built from it.
 */
export async function filesRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const config = { auth: 'none', rateLimit: false } as const;
  const storage = () => uploadStorage(deps.config);

  r.route({
    method: 'GET',
    url: '/files/:key',
    // HEAD is its own route below: the automatic one would read the whole file to discard it.
    exposeHeadRoute: false,
    config,
    schema: {
      tags: ['Uploads'],
      summary: 'An uploaded image (public; cached for a year, immutable; 304 on a matching If-None-Match)',
      params: FileKeyParams,
    },
    handler: async (request, reply) => {
      const { key } = request.params;
      if (!isStorageKey(key)) throw notFound('File');
      if (request.headers['if-none-match']) {
        const info = await storage().head(key);
        if (!info) throw notFound('File');
        if (matchesIfNoneMatch(request, etagOf(key))) return notModified(reply, key);
      }
      const file = await storage().get(key);
      if (!file) throw notFound('File');
      return reply.headers(headersOf(key, file)).send(file.body);
    },
  });

  r.route({
    method: 'HEAD',
    url: '/files/:key',
    config,
    schema: { hide: true, params: FileKeyParams },
    handler: async (request, reply) => {
      const { key } = request.params;
      if (!isStorageKey(key)) throw notFound('File');
      const info = await storage().head(key);
      if (!info) throw notFound('File');
      if (matchesIfNoneMatch(request, etagOf(key))) return notModified(reply, key);
      return reply.headers(headersOf(key, info)).send();
    },
  });
}
