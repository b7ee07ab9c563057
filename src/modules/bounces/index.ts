/**
 * The bounces module's facade: delivery feedback. The one feedback path every source of
 * bounces, complaints and deliveries goes through (SES via SNS in src/modules/webhooks, the inbound
 * SMTP receiver here), VERP return paths, and the receiver itself (docs/bounces.md).
 */
export { type FeedbackEvent, type EmailRef, type Logger, type Outcome, applyFeedback, applyFeedbackIn, SOFT_BOUNCE_LIMIT, SOFT_BOUNCE_SPAN_HOURS, SOFT_BOUNCE_WINDOW_DAYS } from './feedback.service.js';
export { createVerp, type Verp } from './verp.js';
export { classifyMessage, type Classification } from './parse/classify.js';
export { processReceived, type ReceivedMessage } from './inbound.service.js';
// Inbound mail for the projects' own domains (email.received) and the operator CLI's replay.
export { type InboundMail, type InboundMailOutcome, processInboundMail, queueInboundAttachmentDeletion, RECEIVED_EVENT } from './inbound-mail.service.js';
export { type AttachmentStoring, MAX_ATTACHMENT_BYTES, MAX_MESSAGE_ATTACHMENT_BYTES } from './inbound-mail.attachments.js';
export { listStoredFeedback, type StoredFeedback } from './inbound.repo.js';
export { replayStoredFeedback, type ReplayResult } from './inbound.replay.js';
export type { InboundReceiver, ReceiverOptions } from './receiver.js';
export { returnPathsOf, startConfiguredReceiver, startInboundReceiver } from './start.js';

// Routes last (they import other modules' facades).
export { inboundMailRoutes } from './inbound-mail.routes.js';
