/** The tracking module's facade: what the app imports. */
export { trackingRoutes } from './tracking.routes.js';
