import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { ApiError, ErrorCode, LegacyBadRequest } from '../../http/errors.js';
import {
  Contact,
  ContactIdParams,
  ContactList,
  ListContactsQuery,
  LookupBody,
  LookupResult,
  UpdateContactBody,
  UpsertContactBody,
  UpsertedContact,
} from './contacts.schema.js';
import { getContact, listContacts, lookupContacts, patchContact, removeContact, upsertContact } from './contacts.service.js';

/** The project of the request (routes here use the default `secret` auth, which always sets it). */
function projectId(request: FastifyRequest): string {
  if (!request.project) throw new ApiError(401, ErrorCode.UNAUTHORIZED, 'Missing API key: send "Authorization: Bearer <secret key (sk_…)>"');
  return request.project.id;
}

export async function contactsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const tags = ['Contacts'];

  r.get('/contacts', {
    schema: {
      tags,
      summary: 'Cursor list of contacts, newest first by default',
      querystring: ListContactsQuery,
      response: { 200: ContactList },
    },
    handler: async (request) => listContacts(deps.db, projectId(request), request.query),
  });

  r.post('/contacts', {
    schema: {
      tags,
      summary: 'Create or update a contact by email (201 created, 200 existed)',
      body: UpsertContactBody,
      response: { 200: UpsertedContact, 201: UpsertedContact },
    },
    handler: async (request, reply) => {
      const { email, subscribed, data } = request.body;
      if (email === undefined) throw new LegacyBadRequest('Email is required');
      const contact = await upsertContact(deps.db, projectId(request), { email, subscribed, data });
      return reply.code(contact._meta.isNew ? 201 : 200).send(contact);
    },
  });

  r.post('/contacts/lookup', {
    schema: {
      tags,
      summary: 'Which of these emails are contacts of the project (answers in input order)',
      body: LookupBody,
      response: { 200: LookupResult },
    },
    handler: async (request) => lookupContacts(deps.db, projectId(request), request.body.emails),
  });

  r.get('/contacts/:id', {
    schema: { tags, summary: 'One contact', params: ContactIdParams, response: { 200: Contact } },
    handler: async (request) => getContact(deps.db, projectId(request), request.params.id),
  });

  r.patch('/contacts/:id', {
    schema: {
      tags,
      summary: 'Update email, subscription or data (data is merged: null deletes a key)',
      params: ContactIdParams,
      body: UpdateContactBody,
      response: { 200: Contact },
    },
    handler: async (request) => patchContact(deps.db, projectId(request), request.params.id, request.body),
  });

  r.delete('/contacts/:id', {
    schema: { tags, summary: 'Delete a contact and its events permanently', params: ContactIdParams },
    handler: async (request, reply) => {
      await removeContact(deps.db, projectId(request), request.params.id);
      return reply.code(204).send();
    },
  });
}
