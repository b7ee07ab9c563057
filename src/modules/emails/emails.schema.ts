import { z } from 'zod';
import { EMAIL_SOURCES, EMAIL_STATUSES, EMAIL_TYPES } from '../../db/schema.js';

export const EmailIdParams = z.object({ id: z.string() });

const at = () => z.iso.datetime().nullable();

/** One email as the API shows it (GET /emails/:id; docs/sending.md "Reading an email"). */
export const Email = z
  .object({
    id: z.uuid(),
    status: z.enum(EMAIL_STATUSES),
    unconfirmed: z
      .boolean()
      .describe(
        'True when the delivery attempt was interrupted after the message was handed over and before the relay confirmed it: the email is SENT, never sent again, and may or may not have reached the relay',
      ),
    error: z
      .string()
      .nullable()
      .describe(
        'Why the email is FAILED, CANCELLED or unconfirmed; on a PENDING email, why the last attempt failed (it will be retried); null otherwise',
      ),
    to: z.string(),
    toName: z.string().nullable(),
    from: z.string(),
    fromName: z.string().nullable(),
    subject: z.string().describe('As stored; a campaign email holds the campaign subject, filled per recipient at delivery'),
    type: z.enum(EMAIL_TYPES),
    source: z.enum(EMAIL_SOURCES).describe('SEND (/v1/send), CAMPAIGN, WORKFLOW or TEST (a campaign test send)'),
    messageId: z.string().describe('The Message-ID header it is sent with'),
    contactId: z.uuid().nullable(),
    campaignId: z.uuid().nullable(),
    templateId: z.uuid().nullable(),
    attempts: z.int().describe('SMTP attempts started'),
    openCount: z.int(),
    clickCount: z.int(),
    createdAt: z.iso.datetime(),
    sentAt: at().describe('When the relay accepted it (or, unconfirmed, when the interrupted attempt was recorded)'),
    deliveredAt: at(),
    openedAt: at(),
    clickedAt: at(),
    bouncedAt: at(),
    complainedAt: at(),
    failedAt: at(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'Email' });
export type Email = z.infer<typeof Email>;
