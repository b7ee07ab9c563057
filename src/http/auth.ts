import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { type Kysely, sql } from 'kysely';
import type { Database, ProjectRole } from '../db/schema.js';
import { PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX } from '../lib/keys.js';
import { isUuid } from '../lib/uuid.js';
import { ApiError, ErrorCode, forbidden, notFound } from './errors.js';
import { AuthMode, type ProjectContext, Roles, routeConfig } from './context.js';
import type { KeyCache } from './key-cache.js';
import { SESSION_COOKIE, type SessionClaims, type Sessions } from './session.js';

const NEEDS_SECRET = 'This endpoint requires a secret key (sk_…), not a public key (pk_…)';
const NEEDS_PUBLIC = 'This endpoint requires a public key (pk_…), not a secret key (sk_…)';

const invalidKey = (message: string) => new ApiError(401, ErrorCode.INVALID_API_KEY, message);
const unauthorized = (message: string) => new ApiError(401, ErrorCode.UNAUTHORIZED, message);

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw invalidKey('Malformed Authorization header: expected "Bearer <API key>"');
  return match[1];
}

async function projectByKey(db: Kysely<Database>, key: string): Promise<ProjectContext | undefined> {
  const column = key.startsWith(SECRET_KEY_PREFIX) ? 'secret_key' : 'public_key';
  const row = await db
    .selectFrom('projects')
    .select(['id', 'disabled', 'disabled_reason', 'tracking'])
    .where(column, '=', key)
    .executeTakeFirst();
  return row;
}

/**
 * A session is live while its user exists, it was issued after their last password reset and
 * it was not ended by logout: conditions of the one query each session request makes anyway.
 */
const liveSession = (claims: SessionClaims) =>
  sql<boolean>`u.sessions_valid_after < to_timestamp(${claims.issuedAtMs / 1000})
    AND NOT EXISTS (SELECT 1 FROM ended_sessions e WHERE e.id = ${claims.sessionId})`;

async function sessionUserExists(db: Kysely<Database>, claims: SessionClaims): Promise<boolean> {
  const row = await db
    .selectFrom('users as u')
    .select('u.id')
    .where('u.id', '=', claims.userId)
    .where(liveSession(claims))
    .executeTakeFirst();
  return row !== undefined;
}

async function projectByMembership(
  db: Kysely<Database>,
  claims: SessionClaims,
  projectId: string,
): Promise<ProjectContext | undefined> {
  return db
    .selectFrom('memberships as m')
    .innerJoin('projects as p', 'p.id', 'm.project_id')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['p.id', 'p.disabled', 'p.disabled_reason', 'p.tracking', 'm.role'])
    .where('m.user_id', '=', claims.userId)
    .where('m.project_id', '=', projectId)
    .where(liveSession(claims))
    .executeTakeFirst();
}

/**
 * The session user and their membership of `projectId` in one query: no row when the session
 * is not live, a row with a null role when the user is not a member of that project.
 */
async function sessionMembership(
  db: Kysely<Database>,
  claims: SessionClaims,
  projectId: string,
): Promise<{ project: ProjectContext | undefined } | undefined> {
  const row = await db
    .selectFrom('users as u')
    .leftJoin('memberships as m', (join) => join.onRef('m.user_id', '=', 'u.id').on('m.project_id', '=', projectId))
    .leftJoin('projects as p', 'p.id', 'm.project_id')
    .select(['p.id', 'p.disabled', 'p.disabled_reason', 'p.tracking', 'm.role'])
    .where('u.id', '=', claims.userId)
    .where(liveSession(claims))
    .executeTakeFirst();
  if (!row) return undefined;
  const { id, disabled, disabled_reason, tracking, role } = row;
  const project = id !== null && disabled !== null && tracking !== null && role !== null ? { id, disabled, disabled_reason, tracking, role } : undefined;
  return { project };
}

/** The `:id` path parameter: the project of a `user` route that declares `config.roles`. */
function pathProjectId(request: FastifyRequest): string | undefined {
  const params = request.params;
  if (typeof params !== 'object' || params === null || !('id' in params)) return undefined;
  return typeof params.id === 'string' ? params.id : undefined;
}

function assertRole(role: ProjectRole | undefined, allowed: readonly ProjectRole[]): void {
  if (role && !allowed.includes(role)) {
    throw forbidden(`This needs the ${allowed.join(' or ')} role in the project; yours is ${role}`);
  }
}

/** A `user` route acting on the project in its path: members only (404 to others, as for a missing project). */
async function authenticateProjectUser(
  db: Kysely<Database>,
  claims: SessionClaims,
  request: FastifyRequest,
  roles: readonly ProjectRole[],
): Promise<ProjectContext> {
  const projectId = pathProjectId(request);
  const found =
    projectId && isUuid(projectId)
      ? await sessionMembership(db, claims, projectId)
      : (await sessionUserExists(db, claims)) ? { project: undefined } : undefined;
  if (!found) throw unauthorized('Your session has ended: log in again');
  if (!found.project) throw notFound('Project');
  assertRole(found.project.role, roles);
  return found.project;
}

async function authenticateKey(db: Kysely<Database>, cache: KeyCache | undefined, mode: AuthMode, key: string): Promise<ProjectContext> {
  const isSecret = key.startsWith(SECRET_KEY_PREFIX);
  const isPublic = key.startsWith(PUBLIC_KEY_PREFIX);
  if (!isSecret && !isPublic) throw invalidKey('Invalid API key: keys start with pk_ (public) or sk_ (secret)');
  // The key type is checked before the lookup so the message always names the type needed.
  if (mode === AuthMode.secret && isPublic) throw invalidKey(NEEDS_SECRET);
  if (mode === AuthMode.public && isSecret) throw invalidKey(NEEDS_PUBLIC);
  const project = cache ? await cache.lookup(key, () => projectByKey(db, key)) : await projectByKey(db, key);
  if (!project) throw invalidKey('Invalid API key');
  return project;
}

interface AuthOptions {
  db: Kysely<Database>;
  sessions: Sessions;
  /** API key lookups cached in the process (src/http/key-cache.ts); none: one query per request. */
  keyCache?: KeyCache;
}

async function authenticate({ db, sessions, keyCache }: AuthOptions, request: FastifyRequest): Promise<void> {
  const mode = routeConfig(request).auth ?? AuthMode.secret;
  if (mode === AuthMode.none || request.is404) return;

  const key = mode === AuthMode.user ? undefined : bearerToken(request);
  if (key) {
    request.project = await authenticateKey(db, keyCache, mode, key);
  } else if (mode === AuthMode.public) {
    throw unauthorized('Missing API key: send "Authorization: Bearer <public key (pk_…)>"');
  } else {
    const token = request.cookies[SESSION_COOKIE];
    const claims = token ? await sessions.verify(token) : undefined;
    if (!claims) {
      throw unauthorized(
        mode === AuthMode.user
          ? 'Not signed in: log in with POST /auth/login'
          : 'Missing API key: send "Authorization: Bearer <secret key (sk_…)>"',
      );
    }
    const roles = routeConfig(request).roles;
    if (mode === AuthMode.user && roles) {
      request.project = await authenticateProjectUser(db, claims, request, roles);
    } else if (mode === AuthMode.user) {
      if (!(await sessionUserExists(db, claims))) throw unauthorized('Your session has ended: log in again');
    } else {
      const header = request.headers['x-project-id'];
      const projectId = Array.isArray(header) ? header[0] : header;
      if (!projectId) throw unauthorized('Send the X-Project-Id header with the session cookie, or use an API key');
      const project = isUuid(projectId) ? await projectByMembership(db, claims, projectId) : undefined;
      if (!project) throw new ApiError(403, ErrorCode.FORBIDDEN, 'You are not a member of this project (or your session has ended)');
      assertRole(project.role, roles ?? Roles.members);
      request.project = project;
    }
    request.user = { id: claims.userId };
  }

  if (request.project) {
    request.log = request.log.child({ projectId: request.project.id });
    if (request.project.disabled && mode !== AuthMode.user) {
      const why = request.project.disabled_reason ? ` (${request.project.disabled_reason})` : '';
      throw new ApiError(403, ErrorCode.PROJECT_DISABLED, `This project is disabled${why}; an operator must re-enable it`, {
        suggestion: 'The operator re-enables it with: npm run admin -- enable-project --project <id>',
      });
    }
  }
}

/**
 * Enforces each route's declared `config.auth` before anything else runs, so key-type
 * rules hold for every route, present and future, without code in handlers.
 */
export const authPlugin = fp(
  async (app: FastifyInstance, opts: AuthOptions) => {
    app.decorateRequest('project', undefined);
    app.decorateRequest('user', undefined);
    app.addHook('onRoute', (route) => {
      const { auth = AuthMode.secret, roles } = route.config ?? {};
      // A misdeclared route fails at startup rather than answering wrongly.
      if (roles && auth !== AuthMode.user && auth !== AuthMode.secret) throw new Error(`${route.url}: config.roles needs auth 'user' or 'secret'`);
      if (roles && auth === AuthMode.user && !/\/:id(\/|$)/.test(route.url)) throw new Error(`${route.url}: config.roles on a 'user' route needs the project as its :id`);
    });
    app.addHook('onRequest', async (request) => {
      await authenticate(opts, request);
    });
  },
  { name: 'auth', dependencies: ['@fastify/cookie'] },
);

/**
 * The project of a request on a `secret` or `public` route (the auth hook always sets it
 * there; the throw guards a route declared `none` by mistake).
 */
export function projectOf(request: FastifyRequest): ProjectContext {
  if (!request.project) throw unauthorized('Missing API key: send "Authorization: Bearer <secret key (sk_…)>"');
  return request.project;
}

export const projectIdOf = (request: FastifyRequest): string => projectOf(request).id;
