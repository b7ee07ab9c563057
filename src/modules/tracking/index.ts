/** The tracking module's facade: what the app imports. */
// The campaign page's top links (campaign_link_counts, written by the click route).
export { type CampaignLinkRow, topCampaignLinks } from './tracking.repo.js';
export { trackingRoutes } from './tracking.routes.js';
