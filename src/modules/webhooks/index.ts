/** The webhooks module's facade: what the app imports. */
export { webhooksRoutes } from './webhooks.routes.js';
