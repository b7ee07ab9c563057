export { isReservedEventName } from './event-names.js';
export { EVENT_KEY_SAMPLE, sampleEventDataKeys } from './data-keys.js';
export { eventsRoutes } from './events.routes.js';
export { trackRoutes } from './track.routes.js';
