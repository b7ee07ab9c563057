import { generateCodeVerifier, generateState } from 'arctic';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, notFound } from '../../http/errors.js';
import { SESSION_COOKIE } from '../../http/session.js';
import { acceptPendingInvitations } from '../members/index.js';
import { identitiesRoutes } from './identities.routes.js';
import { OAuthFlowError } from './oauth.errors.js';
import { configuredProviders, type OAuthEndpointOverrides, type OAuthProvider } from './oauth.providers.js';
import { CallbackQuery, OAuthConfig, ProviderParams, Redirect } from './oauth.schema.js';
import { linkProvider, signInWithProvider } from './oauth.service.js';
import { createStateCookies, type FlowState } from './oauth.state.js';

export interface OAuthRoutesOptions {
  deps: AppDeps;
  /** Tests only: the fake provider's endpoints (BuildAppOptions.oauthEndpoints). */
  endpoints?: OAuthEndpointOverrides;
}

/** A client that asked for JSON and not for a page gets envelopes instead of redirects (docs/accounts.md). */
const wantsJson = (request: FastifyRequest): boolean => {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
};

/**
 * GitHub and Google sign-in (docs/accounts.md "Sign-in with GitHub or Google"): authorization
 * code with PKCE (S256) and state, both kept for the callback in a signed HttpOnly cookie.
 */
export async function oauthRoutes(app: FastifyInstance, opts: OAuthRoutesOptions): Promise<void> {
  const { deps } = opts;
  const { publicUrl } = deps.config;
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Accounts'];
  const providers = configuredProviders(deps.config.oauth, publicUrl, opts.endpoints);
  const stateCookies = createStateCookies(deps.config.secret, publicUrl);

  const providerOf = (name: string): OAuthProvider => {
    const provider = [...providers.values()].find((p) => p.name === name);
    if (!provider) throw notFound(`OAuth provider "${name}" (configured: ${[...providers.keys()].join(', ') || 'none'})`);
    return provider;
  };

  async function start(reply: FastifyReply, provider: OAuthProvider, linkUserId?: string): Promise<FastifyReply> {
    const flow: FlowState = { provider: provider.name, state: generateState(), codeVerifier: generateCodeVerifier(), ...(linkUserId && { linkUserId }) };
    await stateCookies.set(reply, flow);
    return reply.header('cache-control', 'no-store').redirect(provider.authorizationUrl(flow.state, flow.codeVerifier).toString(), 302);
  }

  await identitiesRoutes(app, deps);

  r.get('/auth/oauth-config', {
    config: { auth: 'none', rateLimit: false },
    schema: { tags, summary: 'The configured OAuth sign-in providers', response: { 200: OAuthConfig } },
    handler: async () => ({
      providers: [...providers.values()].map((p) => ({ id: p.name, name: p.label, url: `/auth/oauth/${p.name}` })),
    }),
  });

  r.get('/auth/oauth/:provider', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Start signing in with a provider: redirects to it',
      description:
        'A browser navigation. Sets a short-lived signed cookie with the state and PKCE verifier and redirects (302) to the provider; ' +
        'the provider sends the browser back to /auth/oauth/{provider}/callback. 404 for a provider that is not configured.',
      params: ProviderParams,
      response: { 302: Redirect },
    },
    handler: async (request, reply) => start(reply, providerOf(request.params.provider)),
  });

  r.get('/auth/oauth/:provider/link', {
    config: { auth: 'user', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Link a provider to the signed-in account: redirects to it',
      description:
        'Like the sign-in start, for a signed-in user: after the provider answers, its account signs in to this user too ' +
        '(redirect to /app/settings?linked={provider}, or ?error=… when refused).',
      params: ProviderParams,
      response: { 302: Redirect },
    },
    handler: async (request, reply) => start(reply, providerOf(request.params.provider), request.user?.id),
  });

  r.get('/auth/oauth/:provider/callback', {
    config: { auth: 'none', rateLimit: 'ip' },
    schema: {
      tags,
      summary: 'Where the provider sends the browser back: signs in and redirects to the dashboard',
      description:
        'Checks the state against the cookie, exchanges the code with the PKCE verifier, reads the verified primary email, ' +
        'signs in (the session cookie, as POST /auth/login) and redirects to /app. A failure redirects to /app/login?error=<reason> ' +
        '(link flows: /app/settings?error=<reason>); a client sending `Accept: application/json` (and not text/html) gets the ' +
        'error envelope instead, with code OAUTH_<REASON> and details.reason. Reasons: docs/accounts.md.',
      params: ProviderParams,
      querystring: CallbackQuery,
      response: { 302: Redirect },
    },
    handler: async (request, reply) => {
      const provider = providerOf(request.params.provider);
      const flow = await stateCookies.read(request);
      // The cookie serves one callback, whatever its outcome.
      stateCookies.clear(reply);
      const back = flow?.linkUserId ? `${publicUrl}/app/settings` : `${publicUrl}/app/login`;
      try {
        const outcome = await complete(request.query, request.cookies[SESSION_COOKIE], reply, provider, flow);
        return reply.redirect(outcome, 302);
      } catch (err) {
        if (!(err instanceof OAuthFlowError)) throw err;
        request.log.info({ reason: err.reason, provider: provider.name, err: err.cause }, 'oauth sign-in refused');
        if (wantsJson(request)) {
          throw new ApiError(err.statusCode, err.reason.toUpperCase(), err.message, { details: { reason: err.reason } });
        }
        return reply.redirect(`${back}?error=${err.reason}`, 302);
      }
    },
  });

  /** The flow's outcome: where the browser goes next; OAuthFlowError when refused. */
  async function complete(
    query: CallbackQuery,
    sessionToken: string | undefined,
    reply: FastifyReply,
    provider: OAuthProvider,
    flow: FlowState | undefined,
  ): Promise<string> {
    const { code, state, error } = query;
    if (error === 'access_denied') throw new OAuthFlowError('oauth_denied', `${provider.label} sign-in was cancelled: consent was declined`);
    if (error) throw new OAuthFlowError('oauth_provider_error', `${provider.label} sign-in failed: the provider answered ${error}`);
    if (!flow || flow.provider !== provider.name) {
      throw new OAuthFlowError('oauth_state_missing', `The ${provider.label} sign-in expired or was not started in this browser: start again`);
    }
    if (!state || state !== flow.state) {
      throw new OAuthFlowError('oauth_state_mismatch', `The ${provider.label} answer does not belong to the sign-in this browser started: start again`);
    }
    if (!code) throw new OAuthFlowError('oauth_provider_error', `${provider.label} sign-in failed: the provider sent no code`);
    const profile = await provider.profile(code, flow.codeVerifier);
    if (flow.linkUserId) {
      const session = sessionToken ? await deps.sessions.verify(sessionToken) : undefined;
      await linkProvider(deps.db, { provider: provider.name, label: provider.label, profile, linkUserId: flow.linkUserId, session });
      return `${publicUrl}/app/settings?linked=${provider.name}`;
    }
    const user = await signInWithProvider(deps.db, {
      provider: provider.name,
      label: provider.label,
      profile,
      signupEnabled: deps.config.signupEnabled,
    });
    // As after a password sign-in: invitations to the account's address, when it is verified.
    await acceptPendingInvitations(deps.db, user);
    await deps.sessions.issue(reply, user.userId);
    return `${publicUrl}/app`;
  }
}
