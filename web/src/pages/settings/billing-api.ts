import { toApiError } from '@/api/client';

/**
 * The billing routes (docs/billing.md). They are hidden from the OpenAPI document while billing is
 * off (where the typed client's schema is generated), so they are typed here from the server's
 * zod schemas (src/modules/billing/billing.schema.ts) and called with fetch (session cookie).
 */
export interface CapUsage {
  limit: number | null;
  usage: number;
  percentage: number | null;
  isWarning: boolean;
  isBlocked: boolean;
}
export interface Period {
  start: string;
  end: string;
}
export interface BillingLimits {
  plan: 'free' | 'subscribed';
  subscriptionStatus: string | null;
  period: Period;
  freeAllowance: CapUsage | null;
  transactional: CapUsage;
  campaign: CapUsage;
  workflow: CapUsage;
}
export interface BillingConsumption {
  period: Period;
  emails: { transactional: number; campaign: number; workflow: number; total: number };
  upcomingInvoice: { amountDue: number; total: number; currency: string; periodStart: string; periodEnd: string; nextPaymentAttempt: string | null } | null;
}
export interface BillingInvoice {
  id: string;
  number: string | null;
  status: string | null;
  total: number;
  amountDue: number;
  currency: string;
  createdAt: string;
  periodStart: string;
  periodEnd: string;
  hostedInvoiceUrl: string | null;
  pdfUrl: string | null;
}
export type CapCategory = 'transactional' | 'campaign' | 'workflow';

export async function billingCall<T>(projectId: string, path: string, init: { method?: 'GET' | 'POST' | 'PUT'; body?: unknown } = {}): Promise<T> {
  const res = await fetch(`/users/@me/projects/${encodeURIComponent(projectId)}/${path}`, {
    method: init.method ?? 'GET',
    credentials: 'same-origin',
    headers: init.body !== undefined ? { 'content-type': 'application/json' } : {},
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
  });
  const text = await res.text();
  const data: unknown = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw toApiError(res.status, data);
  return data as T;
}
