import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { Roles } from '../../http/context.js';
import { ApiError, ErrorCode, notFound } from '../../http/errors.js';
import { findProjectOfUser, insertProject, listProjectsOfUser, rowToProject } from './projects.repo.js';
import { removeProject, resetProject } from './lifecycle.service.js';
import { ConfirmProjectBody, CreateProjectBody, Project, ProjectIdParams, UpdateProjectBody, WebhookSecret } from './projects.schema.js';
import { readWebhookSecret, regenerateProjectKeys, rotateWebhookSecret, updateProjectSettings } from './projects.service.js';

function userId(request: FastifyRequest): string {
  if (!request.user) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Not signed in: log in with POST /auth/login');
  return request.user.id;
}

export async function projectsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const config = { auth: 'user' } as const;
  const members = { auth: 'user', roles: Roles.members } as const;
  const admins = { auth: 'user', roles: Roles.admins } as const;
  const owners = { auth: 'user', roles: Roles.owners } as const;
  const tags = ['Projects'];

  r.get('/users/@me/projects', {
    config,
    schema: { tags, summary: 'Projects you belong to, with their keys', response: { 200: z.array(Project) } },
    handler: async (request) => (await listProjectsOfUser(deps.db, userId(request))).map(rowToProject),
  });

  r.post('/users/@me/projects', {
    config,
    schema: { tags, summary: 'Create a project (you become its OWNER)', body: CreateProjectBody, response: { 201: Project } },
    handler: async (request, reply) => {
      const project = await insertProject(deps.db, { name: request.body.name, ownerId: userId(request) });
      return reply.code(201).send(rowToProject(project));
    },
  });

  r.get('/users/@me/projects/:id', {
    config: members,
    schema: { tags, summary: 'One of your projects', params: ProjectIdParams, response: { 200: Project } },
    handler: async (request) => {
      const project = await findProjectOfUser(deps.db, userId(request), request.params.id);
      if (!project) throw notFound('Project');
      return rowToProject(project);
    },
  });

  r.patch('/users/@me/projects/:id', {
    config: admins,
    schema: { tags, summary: 'Update name, tracking or sending rate (OWNER, ADMIN)', params: ProjectIdParams, body: UpdateProjectBody, response: { 200: Project } },
    handler: async (request) => {
      const row = await updateProjectSettings(deps.db, {
        userId: userId(request),
        projectId: request.params.id,
        patch: request.body,
        maxSendingRate: deps.config.maxProjectSendingRate,
      });
      deps.keyCache?.invalidate(request.params.id);
      return rowToProject(row);
    },
  });

  r.delete('/users/@me/projects/:id', {
    config: owners,
    schema: {
      tags,
      summary: 'Delete a project and all its data (OWNER); body {confirm: "<the project\'s name>"}; its keys stop working at once',
      params: ProjectIdParams,
      body: ConfirmProjectBody,
    },
    handler: async (request, reply) => {
      await removeProject(deps.db, { userId: userId(request), projectId: request.params.id, confirm: request.body.confirm });
      deps.keyCache?.invalidate(request.params.id);
      return reply.code(204).send();
    },
  });

  r.post('/users/@me/projects/:id/reset', {
    config: owners,
    schema: {
      tags,
      summary: 'Irreversibly wipe contacts, events, emails, campaigns, segments, workflows, templates and jobs (OWNER); keeps keys, members and domains',
      description: 'Body {confirm: "<the project\'s name>"}. One transaction: the API shows the data before or after, never half of it.',
      params: ProjectIdParams,
      body: ConfirmProjectBody,
      response: { 200: Project },
    },
    handler: async (request) =>
      rowToProject(await resetProject(deps.db, { userId: userId(request), projectId: request.params.id, confirm: request.body.confirm })),
  });

  r.post('/users/@me/projects/:id/regenerate-keys', {
    config: admins,
    schema: { tags, summary: 'Replace both API keys at once (OWNER, ADMIN); the old ones stop working immediately', params: ProjectIdParams, response: { 200: Project } },
    handler: async (request) => {
      const row = await regenerateProjectKeys(deps.db, { userId: userId(request), projectId: request.params.id });
      // Every process drops the old keys when the commit's notification arrives; this one at once.
      deps.keyCache?.invalidate(request.params.id);
      return rowToProject(row);
    },
  });

  r.get('/users/@me/projects/:id/webhook-secret', {
    config: admins,
    schema: { tags, summary: 'The secret that signs WEBHOOK step calls (OWNER, ADMIN)', params: ProjectIdParams, response: { 200: WebhookSecret } },
    handler: async (request) => ({ secret: await readWebhookSecret(deps.db, { userId: userId(request), projectId: request.params.id }) }),
  });

  r.post('/users/@me/projects/:id/webhook-secret/rotate', {
    config: admins,
    schema: { tags, summary: 'Replace the webhook signing secret (OWNER, ADMIN); calls are signed with the new one at once', params: ProjectIdParams, response: { 200: WebhookSecret } },
    handler: async (request) => ({ secret: await rotateWebhookSecret(deps.db, { userId: userId(request), projectId: request.params.id }) }),
  });
}
