/**
 * The billing module's facade (docs/billing.md): the one cap check every send path calls
 * (`enforceEmailCap`, in the transaction that queues the emails), and the routes.
 */
export { BILLING_LIMIT_REACHED, billingSetupStateReader, enforceEmailCap, type EmailCapInput, isBillingLimitError } from './caps.js';

// Routes last: they import other modules' facades, which may import this one back.
export { billingRoutes } from './billing.routes.js';
