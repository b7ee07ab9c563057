import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { SignJWT, jwtVerify } from 'jose';

export const SESSION_COOKIE = 'session';
const SESSION_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Signs and reads the dashboard session: cookie `session`, JWT HS256 `{sub: userId}`, 7 days. */
export interface Sessions {
  issue(reply: FastifyReply, userId: string): Promise<void>;
  clear(reply: FastifyReply): void;
  /** The user id and issue time (unix milliseconds) of a valid token, or undefined. */
  verify(token: string): Promise<SessionClaims | undefined>;
}

export interface SessionClaims {
  userId: string;
  issuedAtMs: number;
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
        if (typeof payload.sub !== 'string' || typeof payload.iatMs !== 'number') return undefined;
        return { userId: payload.sub, issuedAtMs: payload.iatMs };
      } catch {
        return undefined;
      }
    },
  };
}
