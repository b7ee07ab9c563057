export { callWebhook, type WebhookDeps, type WebhookInput, type WebhookMethod, type WebhookResult } from './webhook/call.js';
export type { WebhookVariables } from './webhook/render-request.js';
/** Definitions (workflows, steps, transitions): routes, step config schemas, usage lookups. */
export { workflowsRoutes } from './workflows.routes.js';
export { conditionOf, delaySeconds, parseStepConfig, type DelayConfig, type SendEmailConfig, type UpdateContactConfig, type WaitForEventConfig, type WebhookConfig } from './steps.schema.js';
export { workflowsUsingEvent, workflowsUsingField, workflowsUsingSegment, workflowsUsingTemplate, type TemplateStepUse } from './usage.js';
/** Engine (src/modules/workflows/engine): the workflow-events and workflow-step jobs, executions. */
export { handleEvents as handleWorkflowEvents } from './engine/events.js';
export { drainEventQueue as drainWorkflowEventQueue, sweepEventQueue as sweepWorkflowEventQueue } from './engine/queue.js';
export { failStepBatch as failWorkflowStepBatch, runStepBatch as runWorkflowStepBatch } from './engine/run.js';
export { cancelDisabledProjectExecutions, enqueueProjectCancel } from './engine/cancel.js';
export { executionsRoutes } from './executions.routes.js';
export { countActiveExecutions } from './executions.repo.js';
