import { projectIdOf } from '../../http/auth.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { LegacyBadRequest } from '../../http/errors.js';
import {
  CreateTemplateBody,
  ListTemplatesQuery,
  Template,
  TEMPLATE_BODY_LIMIT,
  TemplateIdParams,
  TemplateList,
  TemplateTestAnswer,
  TemplateTestBody,
  TemplateUsage,
  UpdateTemplateBody,
} from './templates.schema.js';
import {
  createTemplate,
  duplicateTemplate,
  getTemplate,
  listTemplates,
  patchTemplate,
  removeTemplate,
  templateUsage,
} from './templates.service.js';
import { testSendTemplate } from './test-send.js';

export async function templatesRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Templates'];

  r.get('/templates', {
    schema: {
      tags,
      summary: 'Page list of templates, newest first by default',
      querystring: ListTemplatesQuery,
      response: { 200: TemplateList },
    },
    handler: async (request) => listTemplates(deps.db, projectIdOf(request), request.query),
  });

  r.post('/templates', {
    bodyLimit: TEMPLATE_BODY_LIMIT,
    schema: {
      tags,
      summary: 'Create a template (from is required, on a verified domain)',
      body: CreateTemplateBody,
      response: { 201: Template },
    },
    handler: async (request, reply) => {
      const { from, ...rest } = request.body;
      if (from === undefined) throw new LegacyBadRequest('From address is required');
      const template = await createTemplate(deps.db, projectIdOf(request), { ...rest, from });
      return reply.code(201).send(template);
    },
  });

  r.get('/templates/:id', {
    schema: { tags, summary: 'One template', params: TemplateIdParams, response: { 200: Template } },
    handler: async (request) => getTemplate(deps.db, projectIdOf(request), request.params.id),
  });

  r.patch('/templates/:id', {
    bodyLimit: TEMPLATE_BODY_LIMIT,
    schema: {
      tags,
      summary: 'Update some fields (a new from re-checks its domain; null clears fromName and replyTo)',
      params: TemplateIdParams,
      body: UpdateTemplateBody,
      response: { 200: Template },
    },
    handler: async (request) => patchTemplate(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/templates/:id', {
    schema: { tags, summary: 'Delete a template (emails sent with it keep their rows)', params: TemplateIdParams },
    handler: async (request, reply) => {
      await removeTemplate(deps.db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });

  r.post('/templates/:id/duplicate', {
    schema: {
      tags,
      summary: 'Copy a template as "<name> (copy)"; answers the new template (its id is the new id)',
      params: TemplateIdParams,
      response: { 201: Template },
    },
    handler: async (request, reply) => reply.code(201).send(await duplicateTemplate(deps.db, projectIdOf(request), request.params.id)),
  });

  r.get('/templates/:id/usage', {
    schema: {
      tags,
      summary: 'Campaigns and workflow steps that use the template',
      params: TemplateIdParams,
      response: { 200: TemplateUsage },
    },
    handler: async (request) => templateUsage(deps.db, projectIdOf(request), request.params.id),
  });

  r.post('/templates/:id/test', {
    schema: {
      tags,
      summary: 'Send one test email of the saved template to an address (transactional priority), as a campaign test send',
      description:
        "Rendered now with the data of `contactId`, or of the project's contact with that address, or none. Source TEST: in no campaign or workflow stats. The template's sender domain must be verified (403); a suppressed address gets nothing (the message says why).",
      params: TemplateIdParams,
      body: TemplateTestBody,
      response: { 200: TemplateTestAnswer },
    },
    handler: async (request) =>
      testSendTemplate(
        { db: deps.db, tokens: deps.tokens, publicUrl: deps.config.publicUrl, billing: deps.config.billing },
        { projectId: projectIdOf(request), id: request.params.id, to: request.body.email, contactId: request.body.contactId },
      ),
  });
}
