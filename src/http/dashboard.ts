import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError, ErrorCode } from '../lib/errors.js';

/** Where `npm run build:web` (run by `npm install`'s prepare script) writes the dashboard. */
export const DASHBOARD_DIST = fileURLToPath(new URL('../../web/dist', import.meta.url));

/**
 * The page's policy: scripts and connections to this server only; images from anywhere (template
 * previews show the customer's images); no framing of the dashboard by other sites.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: https: http:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "frame-ancestors 'none'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const noAuth = { auth: 'none', rateLimit: false } as const;

/**
 * The dashboard SPA under /app (DESIGN §1 URL map): hashed assets with immutable caching, every
 * other /app path answered with index.html (the app routes in the browser), and `/` redirected
 * to /app/. Without a build (web/dist missing) /app answers 503 saying how to build it.
 */
export async function registerDashboard(app: FastifyInstance, dist: string = DASHBOARD_DIST): Promise<void> {
  app.get('/', { config: noAuth, schema: { hide: true } }, async (_request, reply) => reply.redirect('/app/'));

  const index = path.join(dist, 'index.html');
  if (!existsSync(index)) {
    const missing = async () => {
      throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, 'The dashboard is not built: run `npm run build:web` (npm install runs it)');
    };
    app.get('/app', { config: noAuth, schema: { hide: true } }, missing);
    app.get('/app/*', { config: noAuth, schema: { hide: true } }, missing);
    return;
  }

  // reply.sendFile for the routes below; the plugin serves nothing by itself (the auth hook must see each route's config).
  // preCompressed: the build's .br/.gz copy when the browser accepts it (the precompress plugin of web/vite.config.ts), with Vary: Accept-Encoding.
  await app.register(fastifyStatic, { root: dist, serve: false, preCompressed: true });

  const page = (reply: FastifyReply) =>
    reply
      .header('cache-control', 'no-cache')
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .sendFile('index.html', dist, { maxAge: 0, cacheControl: false });

  // Files at the root of the build (theme.js, favicon) by name; everything else is a route of the app.
  app.get('/app', { config: noAuth, schema: { hide: true } }, async (_request, reply) => page(reply));
  app.get<{ Params: { '*': string } }>('/app/*', { config: noAuth, schema: { hide: true } }, async (request, reply) => {
    const name = request.params['*'];
    if (/^[\w.-]+\.(js|ico|svg|png|txt)$/.test(name) && existsSync(path.join(dist, name))) {
      return reply.header('cache-control', 'no-cache').header('x-content-type-options', 'nosniff').sendFile(name, dist, { maxAge: 0, cacheControl: false });
    }
    if (name.startsWith('assets/')) {
      // Hashed names: a file never changes, so browsers keep it for a year.
      if (!/^assets\/[\w.-]+$/.test(name) || !existsSync(path.join(dist, name))) throw new ApiError(404, ErrorCode.NOT_FOUND, 'No such dashboard file');
      return reply.header('x-content-type-options', 'nosniff').sendFile(name, dist, { immutable: true, maxAge: '365d' });
    }
    return page(reply);
  });
}
