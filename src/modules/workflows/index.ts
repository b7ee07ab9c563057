export { callWebhook, type WebhookDeps, type WebhookInput, type WebhookMethod, type WebhookResult } from './webhook/call.js';
export type { WebhookVariables } from './webhook/render-request.js';
