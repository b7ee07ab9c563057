import { z } from 'zod';
import { EMAIL_SOURCES, EMAIL_STATUSES, EMAIL_TYPES } from '../../db/schema.js';
import { cursorLimitField, cursorListOf } from '../../http/paging.js';

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
    source: z.enum(EMAIL_SOURCES).describe('SEND (/v1/send), CAMPAIGN, WORKFLOW or TEST (a campaign or template test send)'),
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

export const ContactEmailsParams = z.object({ contactId: z.string() });

export const ContactEmailsQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The `cursor` of the previous page; empty or omitted: the first page'),
});
export type ContactEmailsQuery = z.infer<typeof ContactEmailsQuery>;

const named = (what: string) =>
  z
    .object({ id: z.uuid(), name: z.string() })
    .nullable()
    .describe(`The ${what} it was sent by; null when none, or when the ${what} was deleted since`);

/** One email of a contact (GET /emails/contact/:contactId; docs/sending.md "A contact's emails"). */
export const ContactEmail = z
  .object({
    id: z.uuid(),
    subject: z.string().describe('As stored; a campaign email holds the campaign subject with its {{variables}} (filled per recipient at delivery)'),
    status: z.enum(EMAIL_STATUSES).describe('The furthest milestone: PENDING, SENDING, SENT, DELIVERED, OPENED, CLICKED, BOUNCED, COMPLAINED, FAILED or CANCELLED'),
    unconfirmed: z.boolean().describe('SENT, but the relay never confirmed it (see GET /emails/:id)'),
    error: z.string().nullable().describe('Why it is FAILED or CANCELLED (or why the last attempt failed); null otherwise'),
    source: z.enum(EMAIL_SOURCES).describe('SEND (/v1/send), CAMPAIGN, WORKFLOW or TEST (a campaign or template test send)'),
    type: z.enum(EMAIL_TYPES),
    to: z.string().describe('The address it was sent to (the contact\'s address at the time)'),
    campaign: named('campaign'),
    template: named('template'),
    workflow: named('workflow'),
    openCount: z.int(),
    clickCount: z.int(),
    createdAt: z.iso.datetime().describe('When it was queued'),
    sentAt: at(),
    deliveredAt: at(),
    openedAt: at(),
    clickedAt: at(),
    bouncedAt: at(),
    complainedAt: at(),
    failedAt: at(),
  })
  .meta({ id: 'ContactEmail' });
export type ContactEmail = z.infer<typeof ContactEmail>;

export const ContactEmailList = cursorListOf(ContactEmail)
  .extend({ total: z.int().describe("The contact's emails in all, on the first page (no cursor); 0 on later pages") })
  .meta({ id: 'ContactEmailList' });
export type ContactEmailList = z.infer<typeof ContactEmailList>;
