import type { ProjectRole, TrackingMode } from '../db/schema.js';

/** Who may call a route. Declared on every route as `config.auth`; default `secret`. */
export const AuthMode = {
  /** No authentication (health, docs, hosted pages, signup/login). */
  none: 'none',
  /** The session cookie of a signed-in user (account and project management). */
  user: 'user',
  /** The project's public key only (POST /v1/track). */
  public: 'public',
  /** The project's secret key, or the session cookie plus X-Project-Id. */
  secret: 'secret',
} as const;
export type AuthMode = (typeof AuthMode)[keyof typeof AuthMode];

/** How requests of a route count against rate limits. Default: by project when authenticated. */
export type RateLimitMode = 'project' | 'ip' | false;

export interface ProjectContext {
  id: string;
  disabled: boolean;
  /** Why it was disabled (auto-disable or operator), when it is. */
  disabled_reason: string | null;
  tracking: TrackingMode;
  /** Set when the caller came in with a session cookie rather than a key. */
  role?: ProjectRole;
}

export interface UserContext {
  id: string;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    rateLimit?: RateLimitMode;
    /** Honour the Idempotency-Key header (SPEC Common header). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    project?: ProjectContext;
    user?: UserContext;
  }
}
