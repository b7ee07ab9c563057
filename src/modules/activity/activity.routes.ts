import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { AuthMode, Roles } from '../../http/context.js';
import { ActivityList, ActivityQuery, ActivityTypes, RecentCount, RecentCountQuery, Upcoming, UpcomingQuery } from './activity.schema.js';
import { activityTypes, listActivity, recentActivityCount, upcomingActivity } from './activity.service.js';

/**
 * The activity feed (secret key, or session + X-Project-Id; every member): docs/activity.md.
 * GET /activity/stats belongs to the analytics module.
 */
export async function activityRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Activity'];
  const config = { auth: AuthMode.secret, roles: Roles.members };

  r.get('/activity', {
    config,
    schema: {
      tags,
      summary: 'One feed of events, email lifecycle, subscriptions, segment changes, campaigns and workflow executions, newest first (cursor list)',
      querystring: ActivityQuery,
      response: { 200: ActivityList },
    },
    handler: async (request) => listActivity(deps.db, projectIdOf(request), request.query),
  });

  r.get('/activity/recent-count', {
    config,
    schema: { tags, summary: 'Activity items of the last `minutes` minutes (default 5, at most 60)', querystring: RecentCountQuery, response: { 200: RecentCount } },
    handler: async (request) => recentActivityCount(deps.db, projectIdOf(request), request.query.minutes),
  });

  r.get('/activity/types', {
    config,
    schema: { tags, summary: 'Every activity type, with whether the project has any item of it', response: { 200: ActivityTypes } },
    handler: async (request) => activityTypes(deps.db, projectIdOf(request)),
  });

  r.get('/activity/upcoming', {
    config,
    schema: {
      tags,
      summary: 'Scheduled campaigns and waiting workflow steps (delays, wait timeouts) due in the next `daysAhead` days, soonest first',
      querystring: UpcomingQuery,
      response: { 200: Upcoming },
    },
    handler: async (request) => upcomingActivity(deps.db, projectIdOf(request), request.query),
  });
}
