/** The webhooks module's facade: what the app imports. */
export { relayHeadersOf } from './providers/relay-headers.js';
export { webhooksRoutes } from './webhooks.routes.js';
