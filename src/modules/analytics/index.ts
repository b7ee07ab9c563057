/**
 * The analytics module's facade (docs/analytics.md): the machine-open rule the open pixel applies,
 * the rollup adjustments of deletions (events of a name, contacts), their compaction, and the routes.
 */
export { classifyOpener, type OpenClient, type Opener, type OpenerKind, openSignal, PREFETCH_WINDOW_SECONDS } from './machine-opens.js';
// A campaign's opens and clicks over time (the campaigns module's GET /campaigns/:id/stats/timeseries).
export { campaignTimeseries } from './analytics.service.js';
export { TimeseriesQuery } from './analytics.schema.js';
export { compactRollups, type EventBucketCount, eventBucket, uncountContactEvents, uncountEvents } from './rollups.repo.js';

// Routes last: they import other modules' facades, which may import this one back.
export { analyticsRoutes } from './analytics.routes.js';
