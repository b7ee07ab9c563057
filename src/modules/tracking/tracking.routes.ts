import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppDeps } from '../../app-deps.js';
import { TokenPurpose } from '../../mail/compliance.js';
import {
  managePage,
  notFoundPage,
  PAGE_HEADERS,
  subscribedPage,
  subscribePage,
  unsubscribedPage,
  unsubscribePage,
} from './pages.js';
import {
  clickTokenTarget,
  findTokenSubscriber,
  openTokenEmail,
  type PagePurpose,
  pageTokens,
  recordClick,
  recordOpen,
  setSubscription,
  type Subscriber,
} from './tracking.service.js';

/** A 1×1 transparent GIF (43 bytes). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const NO_CACHE = { 'cache-control': 'no-store, no-cache, must-revalidate, private, max-age=0', pragma: 'no-cache', expires: '0' };
const FORM_BODY_LIMIT = 16 * 1024;

/**
 * Tokens are wildcard params: find-my-way refuses `:params` longer than 100 characters, and
 * a signed token is longer (a click token carries its whole URL).
 */
type TokenRoute = { Params: { '*': string } };
const tokenOf = (request: FastifyRequest<TokenRoute>) => request.params['*'];

/** Every recipient hits these: no authentication, no limit (a company's NAT is one address). */
const TRACKING = { auth: 'none', rateLimit: false } as const;
/** Pages: by client address. The unsubscribe POST is exempt: one-click POSTs come in bursts from a few mailbox providers. */
const PAGE = { auth: 'none', rateLimit: 'ip' } as const;
const ONE_CLICK = { auth: 'none', rateLimit: false } as const;

const sendPage = (reply: FastifyReply, status: number, html: string) => reply.code(status).headers(PAGE_HEADERS).send(html);

/** A form field of a url-encoded body (first value when repeated). */
function formField(body: unknown, name: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value: unknown = Reflect.get(body, name);
  const first: unknown = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : undefined;
}

/** RFC 8058: `List-Unsubscribe=One-Click`, url-encoded (usual) or as multipart/form-data (allowed). */
function isOneClick(body: unknown): boolean {
  if (typeof body === 'string') return body.includes('name="List-Unsubscribe"') && body.includes('One-Click');
  return formField(body, 'List-Unsubscribe') === 'One-Click';
}

/**
 * Open pixel, click redirect and the hosted subscription pages (DESIGN §1, §5; docs/tracking.md).
 * Scoped body parsers: url-encoded forms, and any other type as text (one-click senders may
 * use multipart/form-data; the POST itself is the request, whatever its body).
 */
export async function trackingRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => {
    done(null, parseQueryString(String(body)));
  });
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => done(null, String(body)));
  const schema = { hide: true };
  const pageUrl = (purpose: PagePurpose, token: string) => `${deps.config.publicUrl}/${purpose}/${token}`;
  const links = (s: Subscriber) => {
    const t = pageTokens(deps.tokens, s.ref);
    return { unsubscribe: pageUrl('unsubscribe', t.unsubscribe), subscribe: pageUrl('subscribe', t.subscribe), manage: pageUrl('manage', t.manage) };
  };
  const subscriber = (purpose: PagePurpose, request: FastifyRequest<TokenRoute>) =>
    findTokenSubscriber(deps.db, deps.tokens, purpose, tokenOf(request));

  app.get<TokenRoute>('/t/o/*', { config: TRACKING, schema }, async (request, reply) => {
    const emailId = openTokenEmail(deps.tokens, tokenOf(request));
    if (!emailId) return sendPage(reply, 404, notFoundPage());
    // HEAD (link checkers, proxies) is not an open. A recording failure never breaks the image.
    if (request.method === 'GET') {
      await recordOpen(deps.db, emailId, { userAgent: request.headers['user-agent'] }).catch((err: unknown) =>
        request.log.error({ err, emailId }, 'open not recorded'),
      );
    }
    return reply.code(200).headers(NO_CACHE).type('image/gif').send(PIXEL);
  });

  app.get<TokenRoute>('/t/c/*', { config: TRACKING, schema }, async (request, reply) => {
    const click = clickTokenTarget(deps.tokens, tokenOf(request));
    if (!click) return sendPage(reply, 404, notFoundPage());
    // The recipient reaches the link even when the click cannot be recorded (or the email was deleted).
    if (request.method === 'GET') {
      await recordClick(deps.db, click.emailId, click.url).catch((err: unknown) => request.log.error({ err, emailId: click.emailId }, 'click not recorded'));
    }
    return reply.headers({ ...NO_CACHE, 'referrer-policy': 'no-referrer' }).redirect(click.url, 302);
  });

  app.get<TokenRoute>('/unsubscribe/*', { config: PAGE, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.unsubscribe, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    return sendPage(reply, 200, s.subscribed ? unsubscribePage(s) : unsubscribedPage(s, links(s)));
  });

  app.post<TokenRoute>('/unsubscribe/*', { config: ONE_CLICK, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.unsubscribe, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    const done = await setSubscription(deps.db, s, false);
    if (isOneClick(request.body)) return reply.code(200).headers(NO_CACHE).type('text/plain; charset=utf-8').send('Unsubscribed\n');
    return sendPage(reply, 200, unsubscribedPage(done, links(done)));
  });

  app.get<TokenRoute>('/subscribe/*', { config: PAGE, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.subscribe, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    return sendPage(reply, 200, s.subscribed ? subscribedPage(s, links(s)) : subscribePage(s));
  });

  app.post<TokenRoute>('/subscribe/*', { config: PAGE, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.subscribe, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    const done = await setSubscription(deps.db, s, true);
    return sendPage(reply, 200, subscribedPage(done, links(done)));
  });

  app.get<TokenRoute>('/manage/*', { config: PAGE, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.manage, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    return sendPage(reply, 200, managePage(s));
  });

  app.post<TokenRoute>('/manage/*', { config: PAGE, schema }, async (request, reply) => {
    const s = await subscriber(TokenPurpose.manage, request);
    if (!s) return sendPage(reply, 404, notFoundPage());
    const action = formField(request.body, 'action');
    if (action !== 'subscribe' && action !== 'unsubscribe') return sendPage(reply, 400, managePage(s, 'Choose Subscribe or Unsubscribe.'));
    const done = await setSubscription(deps.db, s, action === 'subscribe');
    return sendPage(reply, 200, managePage(done, done.subscribed ? 'You are subscribed.' : 'You are unsubscribed.'));
  });
}
