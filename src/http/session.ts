import { createHash, randomUUID } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { SignJWT, jwtVerify } from 'jose';
import { isUuid } from '../lib/uuid.js';

export const SESSION_COOKIE = 'session';
const SESSION_TTL_SECONDS = 7 * 24 * 60 * 60;

/**
 * Signs and reads the dashboard session: cookie `session`, JWT HS256 `{sub: userId, jti}`, 7 days.
 * `jti` names the session so logout can end it server-side (the auth check refuses ended ones).
 */
export interface Sessions {
  issue(reply: FastifyReply, userId: string): Promise<void>;
  clear(reply: FastifyReply): void;
  /** The claims of a valid token, or undefined. */
  verify(token: string): Promise<SessionClaims | undefined>;
}

export interface SessionClaims {
  userId: string;
  /** Issue time, unix milliseconds. */
  issuedAtMs: number;
  /** The token's `jti`: a random UUID per sign-in. */
  sessionId: string;
  expiresAt: Date;
}

export function createSessions(secret: string, publicUrl: string): Sessions {
  // A key of its own, derived from SECRET, so tokens of other purposes never verify as sessions.
  const key = createHash('sha256').update(`session:${secret}`).digest();
  const secure = publicUrl.startsWith('https://');
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'lax', secure } as const;
  return {
    async issue(reply, userId) {
      // iatMs: issue time in milliseconds, so a reset ends even sessions issued in the same second.
      const token = await new SignJWT({ iatMs: Date.now() })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(userId)
        .setJti(randomUUID())
        .setIssuedAt()
        .setExpirationTime(`${SESSION_TTL_SECONDS}s`)
        .sign(key);
      reply.setCookie(SESSION_COOKIE, token, { ...cookieOptions, maxAge: SESSION_TTL_SECONDS });
    },
    clear(reply) {
      reply.clearCookie(SESSION_COOKIE, cookieOptions);
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'] });
        const { sub, iatMs, jti, exp } = payload;
        // Tokens issued before sessions had a jti cannot be ended by logout: they are refused.
        if (typeof sub !== 'string' || typeof iatMs !== 'number' || typeof jti !== 'string' || !isUuid(jti) || typeof exp !== 'number') return undefined;
        return { userId: sub, issuedAtMs: iatMs, sessionId: jti, expiresAt: new Date(exp * 1000) };
      } catch {
        return undefined;
      }
    },
  };
}
