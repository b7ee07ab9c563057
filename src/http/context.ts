import type { FastifyContextConfig, FastifyRequest } from 'fastify';
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

/**
 * Project roles that may call a route (DESIGN §4), declared as `config.roles` next to the route
 * and enforced by the auth hook (docs/members.md "Permission matrix"). On `user` routes the
 * project is the `:id` path parameter and the declaration is required (a route under
 * `/projects/:id` without one fails the permission-matrix test); on `secret` routes it applies
 * to session callers (X-Project-Id) and defaults to every member; API keys pass it.
 */
export const Roles = {
  /** Every member: project resources. */
  members: ['OWNER', 'ADMIN', 'MEMBER'],
  /** Members (not owners), keys, settings, the webhook secret. */
  admins: ['OWNER', 'ADMIN'],
  /** Everything, including delete, reset and billing. */
  owners: ['OWNER'],
} as const satisfies Record<string, readonly ProjectRole[]>;

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
    /** Project roles allowed (see `Roles`); `user` routes with a project `:id` must declare it. */
    roles?: readonly ProjectRole[];
    rateLimit?: RateLimitMode;
    /** Honour the Idempotency-Key header (SPEC Common header). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    project?: ProjectContext;
    user?: UserContext;
  }
}

const CONFIG = Symbol('route config');

/** A route's `config` as fastify keeps it: ours, plus the route's pattern and method (`url` unset on the not-found handler). */
export type RouteConfig = FastifyContextConfig & { readonly url?: string };

/**
 * The route's `config`, read once per request: fastify's `request.routeOptions` builds a new
 * 12-field object at every read, and the hooks read the config about six times per request.
 */
export function routeConfig(request: FastifyRequest): RouteConfig {
  const cached = request as FastifyRequest & { [CONFIG]?: RouteConfig };
  return (cached[CONFIG] ??= request.routeOptions.config);
}
