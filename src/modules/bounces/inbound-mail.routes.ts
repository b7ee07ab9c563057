import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { AuthMode, Roles } from '../../http/context.js';
import { notFound } from '../../http/errors.js';
import { findInboundMessage } from './inbound-mail.repo.js';

export const InboundMessage = z
  .object({
    id: z.uuid(),
    receivedAt: z.iso.datetime(),
    contactId: z.uuid().describe('The sender\'s contact'),
    eventId: z.uuid().nullable().describe('Its email.received event'),
    mailFrom: z.string().describe('The envelope sender'),
    recipients: z.array(z.string()).describe("The envelope's accepted addresses of this project"),
    from: z.string(),
    to: z.array(z.string()),
    cc: z.array(z.string()),
    subject: z.string(),
    messageId: z.string().nullable(),
    inReplyTo: z.string().nullable(),
    campaignId: z.uuid().nullable().describe('The campaign of the email it replies to'),
    emailId: z.uuid().nullable().describe('The email of ours it replies to'),
    text: z.string().describe('The text body, up to 256 KB'),
    textTruncated: z.boolean(),
    html: z.string().nullable().describe('The HTML body, up to 256 KB; null when the message has none'),
    htmlTruncated: z.boolean(),
    attachments: z.array(z.object({ filename: z.string().nullable(), contentType: z.string(), size: z.number().int() })).describe('Metadata only: contents are not stored'),
    size: z.number().int().describe('The whole message, bytes'),
  })
  .meta({ id: 'InboundMessage' });

/** GET /inbound-messages/:id: a received message with its stored bodies (docs/bounces.md "Inbound mail"). */
export async function inboundMailRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.get('/inbound-messages/:id', {
    config: { auth: AuthMode.secret, roles: Roles.members },
    schema: {
      tags: ['Inbound mail'],
      summary: 'A received message (the inboundMessageId of an email.received event) with its text and HTML bodies',
      params: z.object({ id: z.string() }),
      response: { 200: InboundMessage },
    },
    handler: async (request) => {
      const row = await findInboundMessage(deps.db, projectIdOf(request), request.params.id);
      if (!row) throw notFound('Inbound message');
      return row;
    },
  });
}
