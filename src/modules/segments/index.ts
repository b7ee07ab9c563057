/** The segments module's facade: what other modules, jobs and the app import. */
export { segmentsReferencingField } from './segments.repo.js';
export { computeSegment, trackedSegmentIds } from './compute.js';
// The contacts-data-indexes job (data key indexes, docs/conditions.md).
export { reconcileDataIndexes, sweepDataIndexes } from './data-indexes.js';
// Contact exports of a segment: its members as the members page lists them.
export { segmentMembership } from './segments.service.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { segmentsRoutes } from './segments.routes.js';
