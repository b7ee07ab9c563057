import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppDeps } from '../../app-deps.js';
import { projectIdOf } from '../../http/auth.js';
import { AuthMode, Roles } from '../../http/context.js';
import { notFound } from '../../http/errors.js';
import { getPrivateObject } from '../uploads/index.js';
import { findInboundMessage, findStoredAttachment, listAttachments } from './inbound-mail.repo.js';

const InboundAttachment = z
  .object({
    index: z.number().int().describe('Its position in the message (0-based): GET /inbound-messages/:id/attachments/:index'),
    filename: z.string().nullable(),
    contentType: z.string().describe('As the message declares it (attacker-supplied)'),
    size: z.number().int().describe('Decoded bytes'),
    stored: z.boolean().describe('Whether its bytes are kept (INBOUND_STORE_ATTACHMENTS, within the limits)'),
    reason: z.string().optional().describe('Why it was not stored'),
    url: z.string().optional().describe('The download path, when stored'),
  })
  .meta({ id: 'InboundAttachment' });

/**
 * Content types served as declared: images, PDF and plain text, which a browser does not run as a
 * page; anything else is application/octet-stream. The download is always an attachment, nosniff,
 * and under a sandboxing CSP.
 */
const SAFE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', 'text/plain']);
const DOWNLOAD_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
  'cache-control': 'private, no-store',
  'cross-origin-resource-policy': 'same-origin',
};

/** `Content-Disposition: attachment` with an ASCII fallback name and the UTF-8 one (RFC 6266, RFC 8187). */
function dispositionOf(filename: string | null): string {
  const name = (filename ?? 'attachment').replace(/[\r\n"\\/]/g, '_');
  const ascii = name.replace(/[^\x20-\x7e]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

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
    attachments: z.array(InboundAttachment).describe('Each attachment; its bytes are stored only with INBOUND_STORE_ATTACHMENTS (docs/bounces.md "Attachments")'),
    size: z.number().int().describe('The whole message, bytes'),
  })
  .meta({ id: 'InboundMessage' });

/**
 * GET /inbound-messages/:id: a received message with its stored bodies and its attachments; GET
 * /inbound-messages/:id/attachments/:index: one stored attachment's bytes (docs/bounces.md "Inbound mail").
 */
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
      const projectId = projectIdOf(request);
      const row = await findInboundMessage(deps.db, projectId, request.params.id);
      if (!row) throw notFound('Inbound message');
      const kept = new Map((await listAttachments(deps.db, projectId, row.id)).map((a) => [a.index, a]));
      const attachments = row.attachments.map((a, index) => {
        const k = kept.get(index);
        return {
          index,
          filename: a.filename,
          contentType: a.contentType,
          size: a.size,
          stored: k?.stored ?? false,
          ...(k && !k.stored && k.reason && { reason: k.reason }),
          ...(!k && { reason: 'attachment storage was off (INBOUND_STORE_ATTACHMENTS)' }),
          ...(k?.stored && { url: `/inbound-messages/${row.id}/attachments/${index}` }),
        };
      });
      return { ...row, attachments };
    },
  });

  r.get('/inbound-messages/:id/attachments/:index', {
    config: { auth: AuthMode.secret, roles: Roles.members },
    schema: {
      tags: ['Inbound mail'],
      summary: 'Downloads a stored attachment of a received message (always as an attachment; application/octet-stream unless an image, PDF or plain text)',
      params: z.object({ id: z.string(), index: z.string() }),
    },
    handler: async (request, reply) => {
      const { id, index } = request.params;
      const at = /^\d{1,9}$/.test(index) ? Number(index) : -1;
      const found = at < 0 ? undefined : await findStoredAttachment(deps.db, projectIdOf(request), id, at);
      if (!found) throw notFound('Attachment');
      const file = await getPrivateObject(deps.config, found.key);
      if (!file) throw notFound('Attachment');
      const type = found.contentType.toLowerCase().split(';')[0]?.trim() ?? '';
      return reply
        .headers({
          ...DOWNLOAD_HEADERS,
          'content-type': SAFE_TYPES.has(type) ? type : 'application/octet-stream',
          'content-length': String(file.size),
          'content-disposition': dispositionOf(found.filename),
          etag: `"${found.sha256}"`,
        })
        .send(file.body);
    },
  });
}
