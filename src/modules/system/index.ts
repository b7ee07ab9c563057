/** The system module's facade: what the app imports. */
export { type LocalWorkers } from './health.service.js';
export { metricsRoutes } from './metrics.routes.js';
export { systemRoutes } from './system.routes.js';
