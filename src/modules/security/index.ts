/**
 * The security module's facade: deliverability reputation (counters, levels, auto-disable),
 * project suspensions and their lifts, and the onboarding setup state (docs/security.md).
 */
export { compactEmailStats, sumEmailStats } from './security.repo.js';
export { assessReputation, type Level, type ReputationCounts } from './thresholds.js';
export { BillingSetupState } from './security.schema.js';
export { checkProjectReputation, liftProjectSuspension, type ReputationCheck, suspendProject } from './security.service.js';
export type { BillingStateReader } from './setup-state.service.js';

// Routes last: they import other modules' facades, which may import this one back.
export { securityRoutes } from './security.routes.js';
