/**
 * The activity module's facade: the feed's routes (docs/activity.md). It reads other modules'
 * tables (events, emails, campaigns, workflow executions) and writes none.
 */
export { ACTIVITY_TYPES } from './activity.rules.js';
export { activityRoutes } from './activity.routes.js';
