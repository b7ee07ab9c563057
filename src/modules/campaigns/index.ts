/** The campaigns module's facade: what other modules, jobs and the app import. */
export { campaignsUsing } from './campaigns.repo.js';
// The campaign jobs: start (fan-out), completion check, sweep.
export { checkCampaignCompletion, enqueueCompletionCheck, runCampaignSend, sweepCampaigns } from './fanout.js';
export { handleStartFailure } from './start-failure.js';

// Routes last: they import other modules' facades, which may import this one back (cycles
// resolve because everything above is evaluated first).
export { campaignsRoutes } from './campaigns.routes.js';
