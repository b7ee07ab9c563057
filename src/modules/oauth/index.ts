/** The OAuth module's facade: what the app imports. */
export type { OAuthEndpointOverrides, OAuthEndpoints } from './oauth.providers.js';
export { oauthRoutes } from './oauth.routes.js';
