/**
 * The webhook-endpoints module's facade: outgoing delivery-status webhooks
 * (docs/webhooks-outgoing.md). Events are captured by triggers (migration 0028), so no other
 * module calls in; the jobs call the deliverer, the sweep and the retention cleanup.
 */
export { deleteOldDeliveries, wakeStrandedEndpoints } from './deliveries.repo.js';
export { endpointSecretBox } from './payload.js';
export { deliverEndpoint, type DelivererDeps } from './deliver.js';

/** Finished deliveries stay in the log this long (the `webhook-cleanup` cron job). */
export const DELIVERY_LOG_RETENTION_DAYS = 7;

// Routes last: they import other modules' facades, which may import this one back.
export { webhookEndpointsRoutes } from './webhook-endpoints.routes.js';
