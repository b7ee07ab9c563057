import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { Roles } from '../../http/context.js';
import {
  ActivityStats,
  CampaignStats,
  RangeQuery,
  Timeseries,
  TimeseriesQuery,
  TopCampaigns,
  TopCampaignsQuery,
  TopEvents,
  TopEventsQuery,
} from './analytics.schema.js';
import { activityStats, campaignStats, timeseries, topCampaigns, topEvents } from './analytics.service.js';

/**
 * /analytics/* and GET /activity/stats (secret key, or session + X-Project-Id; every member):
 * read from the rollups of migration 0029 (docs/analytics.md), never by counting emails or events.
 */
export async function analyticsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Analytics'];
  const config = { auth: 'secret', roles: Roles.members } as const;

  r.get('/analytics/timeseries', {
    config,
    schema: {
      tags,
      summary: 'Emails sent, delivered, opened, clicked, bounced and complained per local hour or day, zero-filled',
      description:
        'Default range: the 30 local days up to today (`interval=day`) or the 24 local hours up to the current one (`interval=hour`). ' +
        'At most 366 days. Opens are first opens by a person (machine opens excluded); every email counts once per milestone, at its time.',
      querystring: TimeseriesQuery,
      response: { 200: Timeseries },
    },
    handler: async (request) => timeseries(deps.db, projectIdOf(request), request.query),
  });

  r.get('/analytics/top-campaigns', {
    config,
    schema: { tags, summary: 'Campaigns that sent email, by opens, clicks or emails sent', querystring: TopCampaignsQuery, response: { 200: TopCampaigns } },
    handler: async (request) => topCampaigns(deps.db, projectIdOf(request), request.query),
  });

  r.get('/analytics/campaign-stats', {
    config,
    schema: { tags, summary: 'Campaigns per state and their average open and click rates', response: { 200: CampaignStats } },
    handler: async (request) => campaignStats(deps.db, projectIdOf(request)),
  });

  r.get('/analytics/top-events', {
    config,
    schema: {
      tags,
      summary: 'Most frequent tracked events of a range (default the last 30 days) with the change against the period before',
      querystring: TopEventsQuery,
      response: { 200: TopEvents },
    },
    handler: async (request) => topEvents(deps.db, projectIdOf(request), request.query),
  });

  r.get('/activity/stats', {
    config,
    schema: {
      tags: ['Activity'],
      summary: 'Email totals and rates of a range (default the last 30 days)',
      description: 'Counts are of what happened in the range; rates are of the emails sent in the range (what became of them by now).',
      querystring: RangeQuery,
      response: { 200: ActivityStats },
    },
    handler: async (request) => activityStats(deps.db, projectIdOf(request), request.query),
  });
}
