import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { Roles } from '../../http/context.js';
import { notFound } from '../../http/errors.js';
import { ProjectIdParams, SecurityState, SetupState } from './security.schema.js';
import { readSecurityState, type SecurityState as State } from './security.service.js';
import { type BillingStateReader, readProjectSetupState } from './setup-state.service.js';

/** The project of the path, a membership the auth hook checked (`config.roles`). */
function projectId(request: FastifyRequest): string {
  if (!request.project) throw notFound('Project');
  return request.project.id;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toSecurityState(state: State, autoDisable: boolean): SecurityState {
  const { row, assessment, suspensions } = state;
  const window = (w: { sent: number; bounced: number; complained: number }) => ({
    sent: w.sent,
    bounces: w.bounced,
    complaints: w.complained,
    bounceRate: w.sent > 0 ? w.bounced / w.sent : 0,
    complaintRate: w.sent > 0 ? w.complained / w.sent : 0,
  });
  return {
    projectId: row.projectId,
    level: assessment.level,
    disabled: row.disabled,
    disabledReason: row.disabledReason,
    disabledAt: iso(row.disabledAt),
    autoDisable,
    young: row.young,
    countingSince: iso(row.liftedAt),
    windows: { last24h: window(row.counts.last24h), last7d: window(row.counts.last7d), allTime: window(row.counts.allTime) },
    metrics: assessment.metrics,
    suspensions: suspensions.map((s) => ({
      id: s.id,
      source: s.source,
      reason: s.reason,
      metrics: s.metrics,
      createdAt: s.created_at.toISOString(),
      liftedAt: iso(s.lifted_at),
      liftedBy: s.lifted_by,
    })),
  };
}

/**
 * GET /projects/:id/security, /users/@me/projects/:id/security (the same answer) and
 * /projects/:id/setup-state: session-cookie routes; any member of the project (OWNER, ADMIN,
 * MEMBER: `Roles.members`, checked by the auth hook) reads them, anyone else gets 404. A disabled project's state stays readable.
 */
export async function securityRoutes(app: FastifyInstance, deps: AppDeps & { billingState?: BillingStateReader }): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const config = { auth: 'user', roles: Roles.members } as const;
  const tags = ['Projects'];
  const security = {
    config,
    schema: {
      tags,
      summary: 'Bounce and complaint counts, rates and levels (24 h, 7 days, all time), the disabled state and the suspension history (any member)',
      params: ProjectIdParams,
      response: { 200: SecurityState },
    },
    handler: async (request: FastifyRequest<{ Params: { id: string } }>) =>
      toSecurityState(await readSecurityState(deps.db, projectId(request)), deps.config.autoDisableProjects),
  };
  r.get('/projects/:id/security', security);
  r.get('/users/@me/projects/:id/security', security);

  r.get('/projects/:id/setup-state', {
    config,
    schema: { tags, summary: 'What onboarding needs, in one query (any member)', params: ProjectIdParams, response: { 200: SetupState } },
    handler: async (request) =>
      readProjectSetupState(deps.db, { projectId: projectId(request), billing: deps.billingState }),
  });
}
