import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { addStaticMembers, removeStaticMembers } from './members.service.js';
import {
  AddMembersBody,
  AddMembersResult,
  ComputeResult,
  ConditionCount,
  CountConditionBody,
  CreateSegmentBody,
  MemberPage,
  MembersQuery,
  RemoveMembersBody,
  RemoveMembersResult,
  Segment,
  SegmentIdParams,
  SegmentList,
  UpdateSegmentBody,
} from './segments.schema.js';
import {
  computeMembers,
  countCondition,
  createSegment,
  getSegment,
  getSegments,
  listMembers,
  patchSegment,
  refreshCount,
  removeSegment,
} from './segments.service.js';

/** Segments (dashboard API: secret key, or session + X-Project-Id). */
export async function segmentsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Segments'];
  const params = SegmentIdParams;

  r.get('/segments', {
    schema: { tags, summary: 'Every segment of the project, newest first (not paginated)', response: { 200: SegmentList } },
    handler: async (request) => getSegments(deps.db, projectIdOf(request)),
  });

  r.post('/segments', {
    schema: {
      tags,
      summary: 'Create a segment (DYNAMIC needs a condition: 400 without one; STATIC ignores it)',
      body: CreateSegmentBody,
      response: { 201: Segment },
    },
    handler: async (request, reply) => reply.code(201).send(await createSegment(deps.db, projectIdOf(request), request.body)),
  });

  r.post('/segments/count', {
    schema: {
      tags,
      summary: 'Count the contacts a condition matches now, without saving a segment (live counts while editing)',
      body: CountConditionBody,
      response: { 200: ConditionCount },
    },
    handler: async (request) => countCondition(deps.db, projectIdOf(request), request.body.condition),
  });

  r.get('/segments/:id', {
    schema: { tags, summary: 'One segment with its cached memberCount', params, response: { 200: Segment } },
    handler: async (request) => getSegment(deps.db, projectIdOf(request), request.params.id),
  });

  r.patch('/segments/:id', {
    schema: { tags, summary: 'Update name, description, condition (DYNAMIC only) or trackMembership', params, body: UpdateSegmentBody, response: { 200: Segment } },
    handler: async (request) => patchSegment(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/segments/:id', {
    schema: { tags, summary: 'Delete; 409 while a scheduled/sending campaign, another segment or a workflow CONDITION step uses it', params },
    handler: async (request, reply) => {
      await removeSegment(deps.db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });

  r.get('/segments/:id/contacts', {
    schema: { tags, summary: 'Page of members (live for DYNAMIC), newest contact first', params, querystring: MembersQuery, response: { 200: MemberPage } },
    handler: async (request) => listMembers(deps.db, projectIdOf(request), request.params.id, request.query),
  });

  r.post('/segments/:id/members', {
    schema: { tags, summary: 'STATIC only: add contacts by email (409 on DYNAMIC)', params, body: AddMembersBody, response: { 200: AddMembersResult } },
    handler: async (request) => addStaticMembers(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/segments/:id/members', {
    schema: { tags, summary: 'STATIC only: remove contacts by email (409 on DYNAMIC)', params, body: RemoveMembersBody, response: { 200: RemoveMembersResult } },
    handler: async (request) => removeStaticMembers(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.post('/segments/:id/compute', {
    schema: {
      tags,
      summary: 'Recompute membership of a tracked DYNAMIC segment, recording entry/exit events (others: count refresh)',
      params,
      response: { 200: ComputeResult },
    },
    handler: async (request) => computeMembers(deps.db, projectIdOf(request), request.params.id),
  });

  r.post('/segments/:id/refresh', {
    schema: { tags, summary: 'Refresh the cached member count only (no events, no member writes)', params, response: { 200: Segment } },
    handler: async (request) => refreshCount(deps.db, projectIdOf(request), request.params.id),
  });
}
