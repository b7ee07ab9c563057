import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import {
  ContactEventsQuery,
  ContactIdParams,
  EventList,
  EventNameParams,
  EventNames,
  EventStats,
  EventUsage,
  ListEventsQuery,
  StatsQuery,
} from './events.schema.js';
import {
  deleteEventName,
  eventNameUsage,
  listContactEvents,
  listProjectEvents,
  projectEventNames,
  projectEventStats,
} from './events.service.js';
import { projectIdOf } from '../../http/auth.js';

/**
 * The dashboard's events routes (secret key or session + X-Project-Id). POST /events/track
 * lives in track.routes.ts, beside /v1/track, because both share one batcher.
 */
export async function eventsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Events'];

  r.get('/events', {
    schema: { tags, summary: 'Recent events, newest first (cursor list)', querystring: ListEventsQuery, response: { 200: EventList } },
    handler: async (request) => {
      const { limit, cursor, name, contactId } = request.query;
      return listProjectEvents(deps.db, projectIdOf(request), { limit, cursor, filter: { name, contactId } });
    },
  });

  r.get('/events/contact/:contactId', {
    schema: {
      tags,
      summary: 'Events of one contact, newest first (cursor list); 404 when the contact is not in the project',
      params: ContactIdParams,
      querystring: ContactEventsQuery,
      response: { 200: EventList },
    },
    handler: async (request) => listContactEvents(deps.db, projectIdOf(request), request.params.contactId, request.query),
  });

  r.get('/events/names', {
    schema: { tags, summary: 'Distinct event names with counts and when last seen', response: { 200: EventNames } },
    handler: async (request) => projectEventNames(deps.db, projectIdOf(request)),
  });

  r.get('/events/stats', {
    schema: {
      tags,
      summary: 'Counts per name over the last 24 h, 7 d, 30 d and all time; `days` adds a daily series',
      querystring: StatsQuery,
      response: { 200: EventStats },
    },
    handler: async (request) => projectEventStats(deps.db, projectIdOf(request), request.query),
  });

  r.get('/events/:eventName/usage', {
    schema: { tags, summary: 'Segments, campaigns and workflows referencing an event name', params: EventNameParams, response: { 200: EventUsage } },
    handler: async (request) => eventNameUsage(deps.db, projectIdOf(request), request.params.eventName),
  });

  r.delete('/events/:eventName', {
    schema: { tags, summary: "Delete every event of this name (not the service's own names)", params: EventNameParams },
    handler: async (request, reply) => {
      await deleteEventName(deps.db, projectIdOf(request), request.params.eventName);
      return reply.code(204).send();
    },
  });
}
