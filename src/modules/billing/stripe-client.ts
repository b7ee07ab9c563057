import type Stripe from 'stripe';
import type { BillingConfig } from '../../config.js';
import { ApiError } from '../../lib/errors.js';

/**
 * The official client, pointed at STRIPE_API_URL when set (tests: a fake Stripe API on loopback).
 * The package (~4 MB of heap) is loaded only here, when billing is on (docs/performance.md "Memory").
 */
export async function createStripeClient(billing: BillingConfig): Promise<Stripe> {
  const url = billing.apiUrl ? new URL(billing.apiUrl) : undefined;
  const { default: StripeClient } = await import('stripe');
  return new StripeClient(billing.secretKey, {
    maxNetworkRetries: 1,
    timeout: 15_000,
    ...(url && {
      host: url.hostname,
      port: url.port || (url.protocol === 'https:' ? 443 : 80),
      protocol: url.protocol === 'https:' ? 'https' : 'http',
    }),
  });
}

/** A Stripe API failure as the 502 the caller sees (Stripe's own message kept for the logs, not shown). */
export function stripeFailure(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError(502, 'BILLING_PROVIDER_ERROR', 'The payment provider did not answer as expected; try again in a moment', { cause: err });
}
