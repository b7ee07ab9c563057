import { z } from 'zod';
import { WEBHOOK_DELIVERY_STATUSES } from '../../db/schema.js';
import { cursorLimitField } from '../../http/paging.js';
import { WEBHOOK_EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES } from './event-types.js';

/** Endpoints a project may register (docs/webhooks-outgoing.md "Limits"). */
export const MAX_ENDPOINTS_PER_PROJECT = 20;
const MAX_URL_LENGTH = 2048;

const eventList = WEBHOOK_EVENT_TYPES.map((t) => `\`${t}\` (${WEBHOOK_EVENT_DESCRIPTIONS[t]})`).join('; ');

const iso = z.iso.datetime();

export const WebhookEndpoint = z
  .object({
    id: z.uuid(),
    url: z.string().describe('Called with POST for each event'),
    events: z.array(z.string()).describe('The event types it receives'),
    enabled: z.boolean().describe('False: nothing is captured or delivered for it'),
    disabledReason: z.string().nullable().describe('Why it was disabled automatically (a day of failed attempts); null otherwise'),
    disabledAt: iso.nullable(),
    failingSince: iso.nullable().describe('The first failed attempt since the last delivered one; null while deliveries succeed'),
    createdAt: iso,
    updatedAt: iso,
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: z.string().describe('`whsec_…`: signs every call (X-Signature). Shown only here: on create and on rotate-secret'),
}).meta({ id: 'WebhookEndpointWithSecret' });
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = z.object({ data: z.array(WebhookEndpoint) }).meta({ id: 'WebhookEndpointList' });
export type WebhookEndpointList = z.infer<typeof WebhookEndpointList>;

const url = z
  .string()
  .trim()
  .min(1)
  .max(MAX_URL_LENGTH)
  .describe('http or https; a private, loopback or link-local address is refused unless WEBHOOK_ALLOW_PRIVATE');
const events = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length * 2)
  .describe(`One or more of: ${eventList}. Repeated names count once`);

export const CreateWebhookEndpointBody = z.object({
  url,
  events,
  enabled: z.boolean().optional().describe('Default true'),
});
export type CreateWebhookEndpointBody = z.infer<typeof CreateWebhookEndpointBody>;

export const UpdateWebhookEndpointBody = z.object({
  url: url.optional(),
  events: events.optional(),
  enabled: z.boolean().optional().describe('true re-enables it and clears its failure state; false stops it (pending deliveries are given up)'),
});
export type UpdateWebhookEndpointBody = z.infer<typeof UpdateWebhookEndpointBody>;

export const WebhookEndpointIdParams = z.object({ id: z.string().describe('The endpoint id') });

export const TestWebhookResult = z
  .object({
    success: z.boolean().describe('The endpoint answered 2xx'),
    statusCode: z.int().nullable(),
    responseExcerpt: z.string().nullable(),
    error: z.string().nullable(),
    durationMs: z.int(),
    eventId: z.uuid().describe('The ping\'s X-Webhook-Id (type `webhook.test`); it is in the delivery log'),
  })
  .meta({ id: 'WebhookTestResult' });
export type TestWebhookResult = z.infer<typeof TestWebhookResult>;

export const WebhookPayload = z
  .object({
    id: z.uuid().describe('The event id, also X-Webhook-Id: the same on every retry (de-duplicate on it)'),
    type: z.string(),
    createdAt: iso.describe('When the event happened'),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'WebhookPayload' });

export const WebhookDelivery = z
  .object({
    id: z.uuid(),
    eventId: z.uuid(),
    eventType: z.string(),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES).describe('PENDING (due or waiting for a retry), DELIVERED (2xx), FAILED (given up after 24 hours, or the endpoint was disabled)'),
    attempts: z.int(),
    statusCode: z.int().nullable().describe('Of the last attempt; null when no answer came'),
    responseExcerpt: z.string().nullable().describe('The first 1,000 characters of the last answer'),
    error: z.string().nullable().describe('Why the last attempt failed'),
    durationMs: z.int().nullable(),
    lastAttemptAt: iso.nullable(),
    nextAttemptAt: iso.nullable().describe('PENDING only: when it is tried next'),
    finishedAt: iso.nullable().describe('When it was delivered or given up'),
    createdAt: iso,
    payload: WebhookPayload,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const ListDeliveriesQuery = z.object({
  limit: cursorLimitField(),
  cursor: z.string().optional().describe('The cursor of the previous page'),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional().describe('Omitted: every status'),
});
export type ListDeliveriesQuery = z.infer<typeof ListDeliveriesQuery>;

export const WebhookDeliveryList = z
  .object({
    data: z.array(WebhookDelivery),
    cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
    hasMore: z.boolean(),
  })
  .meta({ id: 'WebhookDeliveryList' });
export type WebhookDeliveryList = z.infer<typeof WebhookDeliveryList>;
