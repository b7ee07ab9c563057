import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { listEmailsOfContact } from './contact-emails.service.js';
import { ContactEmailList, ContactEmailsParams, ContactEmailsQuery, Email, EmailIdParams } from './emails.schema.js';
import { getEmail } from './emails.service.js';

/** GET /emails/:id and GET /emails/contact/:contactId (secret key, or session + X-Project-Id). */
export async function emailsRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/emails/:id', {
    schema: {
      tags: ['Sending'],
      summary: 'One email: status, why it failed or was cancelled, whether its delivery is unconfirmed',
      description: 'The id is one of the `email` values answered by POST /v1/send (or a campaign email\'s id). Another project\'s email is 404.',
      params: EmailIdParams,
      response: { 200: Email },
    },
    handler: async (request) => getEmail(deps.db, projectIdOf(request), request.params.id),
  });

  r.get('/emails/contact/:contactId', {
    schema: {
      tags: ['Sending'],
      summary: "A contact's emails with their status, newest first (cursor list); 404 when the contact is not in the project",
      description:
        'Every email sent to the contact (/v1/send, campaigns, workflows, test sends), with the campaign, template and workflow it came from and its milestones. `total` is given on the first page only.',
      params: ContactEmailsParams,
      querystring: ContactEmailsQuery,
      response: { 200: ContactEmailList },
    },
    handler: async (request) => listEmailsOfContact(deps.db, projectIdOf(request), request.params.contactId, request.query),
  });
}
