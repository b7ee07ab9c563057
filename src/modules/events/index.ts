export { isReservedEventName } from './event-names.js';
// Events the service records itself in its own transactions (the inbound receiver's email.received).
export { insertEvents, type InsertedEvent, type NewEvent } from './events.insert.js';
export { EVENT_KEY_SAMPLE, sampleEventDataKeys } from './data-keys.js';
export { eventsRoutes } from './events.routes.js';
export { trackRoutes } from './track.routes.js';
