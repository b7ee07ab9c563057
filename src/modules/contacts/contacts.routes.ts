import { projectIdOf } from '../../http/auth.js';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { LegacyBadRequest } from '../../http/errors.js';
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
    handler: async (request) => listContacts(deps.db, projectIdOf(request), request.query),
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
      const contact = await upsertContact(deps.db, projectIdOf(request), { email, subscribed, data });
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
    handler: async (request) => lookupContacts(deps.db, projectIdOf(request), request.body.emails),
  });

  r.get('/contacts/:id', {
    schema: { tags, summary: 'One contact', params: ContactIdParams, response: { 200: Contact } },
    handler: async (request) => getContact(deps.db, projectIdOf(request), request.params.id),
  });

  r.patch('/contacts/:id', {
    schema: {
      tags,
      summary: 'Update email, subscription or data (data is merged: null deletes a key)',
      params: ContactIdParams,
      body: UpdateContactBody,
      response: { 200: Contact },
    },
    handler: async (request) => patchContact(deps.db, projectIdOf(request), request.params.id, request.body),
  });

  r.delete('/contacts/:id', {
    schema: { tags, summary: 'Delete a contact and its events permanently', params: ContactIdParams },
    handler: async (request, reply) => {
      await removeContact(deps.db, projectIdOf(request), request.params.id);
      return reply.code(204).send();
    },
  });
}
