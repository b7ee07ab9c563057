import { z } from 'zod';

export const ProjectIdParams = z.object({ id: z.string().describe('Project id') });

export const BillingUrl = z.object({ url: z.string().describe('Stripe page to send the browser to') });

/** One monthly cap and how much of it is used. */
export const CapUsage = z.object({
  limit: z.number().int().nullable().describe('Emails a month; null: no cap'),
  usage: z.number().int().describe('Emails queued this month'),
  percentage: z.number().nullable().describe('usage / limit × 100 (one decimal); null without a cap'),
  isWarning: z.boolean().describe('80 % of the cap or more'),
  isBlocked: z.boolean().describe('Sending in this category is refused (402 BILLING_LIMIT_REACHED) until the cap is raised or the month ends'),
});
export type CapUsage = z.infer<typeof CapUsage>;

const Period = z.object({ start: z.string().describe('First instant of the UTC month'), end: z.string().describe('First instant of the next one') });

export const BillingLimits = z.object({
  plan: z.enum(['free', 'subscribed']),
  subscriptionStatus: z.string().nullable().describe("Stripe's subscription status; null: never subscribed"),
  period: Period,
  freeAllowance: CapUsage.nullable().describe('The free emails a month, all categories together; null when subscribed'),
  transactional: CapUsage.describe('POST /v1/send and test sends'),
  campaign: CapUsage,
  workflow: CapUsage.describe('Workflow SEND_EMAIL steps'),
});
export type BillingLimits = z.infer<typeof BillingLimits>;

const Cap = z.number().int().min(0).max(1_000_000_000).nullable().optional().describe('Emails a month; null removes the cap; omitted: unchanged');

export const PutBillingLimitsBody = z.object({ transactional: Cap, campaign: Cap, workflow: Cap });
export type PutBillingLimitsBody = z.infer<typeof PutBillingLimitsBody>;

export const BillingConsumption = z.object({
  period: Period,
  emails: z.object({ transactional: z.number().int(), campaign: z.number().int(), workflow: z.number().int(), total: z.number().int() })
    .describe('Emails created this month and not cancelled, from the email rows'),
  upcomingInvoice: z
    .object({
      amountDue: z.number().int().describe('Smallest currency unit (cents)'),
      total: z.number().int(),
      currency: z.string(),
      periodStart: z.string(),
      periodEnd: z.string(),
      nextPaymentAttempt: z.string().nullable(),
    })
    .nullable()
    .describe("Stripe's preview of the next invoice; null without a subscription"),
});
export type BillingConsumption = z.infer<typeof BillingConsumption>;

export const BillingInvoice = z.object({
  id: z.string(),
  number: z.string().nullable(),
  status: z.string().nullable(),
  total: z.number().int(),
  amountDue: z.number().int(),
  currency: z.string(),
  createdAt: z.string(),
  periodStart: z.string(),
  periodEnd: z.string(),
  hostedInvoiceUrl: z.string().nullable(),
  pdfUrl: z.string().nullable(),
});
export type BillingInvoice = z.infer<typeof BillingInvoice>;

export const BillingInvoices = z.object({ data: z.array(BillingInvoice), hasMore: z.boolean() });

export const WebhookAnswer = z.object({ received: z.literal(true), result: z.enum(['applied', 'replay', 'ignored']) });
