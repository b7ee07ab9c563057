/** The verify module's facade: what the app imports. */
export { verifyRoutes } from './verify.routes.js';
