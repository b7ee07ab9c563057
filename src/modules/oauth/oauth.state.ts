import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SignJWT, jwtVerify } from 'jose';
import { OAUTH_PROVIDERS, type OAuthProviderName } from '../../db/schema.js';

export const STATE_COOKIE = 'oauth_state';
/** How long a started sign-in may take at the provider. */
export const STATE_TTL_SECONDS = 10 * 60;

/** What the start route keeps for the callback, in a signed HttpOnly cookie of this browser. */
export interface FlowState {
  provider: OAuthProviderName;
  state: string;
  codeVerifier: string;
  /** Set when a signed-in user started linking the provider to their account. */
  linkUserId?: string;
}

export interface StateCookies {
  set(reply: FastifyReply, flow: FlowState): Promise<void>;
  /** The flow this browser started, or undefined when the cookie is missing, expired or forged. */
  read(request: FastifyRequest): Promise<FlowState | undefined>;
  clear(reply: FastifyReply): void;
}

const isProvider = (v: unknown): v is OAuthProviderName => OAUTH_PROVIDERS.some((p) => p === v);

export function createStateCookies(secret: string, publicUrl: string): StateCookies {
  // A key of its own, derived from SECRET: a state token never verifies as a session, nor the reverse.
  const key = createHash('sha256').update(`oauth-state:${secret}`).digest();
  // Lax: the provider's redirect back is a top-level GET navigation, which carries Lax cookies.
  // The path keeps the cookie off every other request.
  const options = { path: '/auth/oauth', httpOnly: true, sameSite: 'lax', secure: publicUrl.startsWith('https://') } as const;
  return {
    async set(reply, flow) {
      const token = await new SignJWT({ ...flow })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt()
        .setExpirationTime(`${STATE_TTL_SECONDS}s`)
        .sign(key);
      reply.setCookie(STATE_COOKIE, token, { ...options, maxAge: STATE_TTL_SECONDS });
    },
    async read(request) {
      const token = request.cookies[STATE_COOKIE];
      if (!token) return undefined;
      try {
        const { payload: p } = await jwtVerify(token, key, { algorithms: ['HS256'] });
        if (!isProvider(p.provider) || typeof p.state !== 'string' || typeof p.codeVerifier !== 'string') return undefined;
        if (p.linkUserId !== undefined && typeof p.linkUserId !== 'string') return undefined;
        return { provider: p.provider, state: p.state, codeVerifier: p.codeVerifier, ...(p.linkUserId && { linkUserId: p.linkUserId }) };
      } catch {
        return undefined;
      }
    },
    clear(reply) {
      reply.clearCookie(STATE_COOKIE, options);
    },
  };
}
