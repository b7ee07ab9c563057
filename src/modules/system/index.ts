/** The system module's facade: what the app imports. */
export { systemRoutes } from './system.routes.js';
