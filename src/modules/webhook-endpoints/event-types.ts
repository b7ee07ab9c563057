/**
 * The event types an endpoint can receive (docs/webhooks-outgoing.md "Events"). The email and
 * contact names are the ones the `events` table records (emails/status.ts STATUS_EVENT, the
 * contacts subscription trigger); the capture triggers of migration 0028 match them by name.
 */
export const WEBHOOK_EVENT_TYPES = [
  'email.sent',
  'email.delivery',
  'email.open',
  'email.click',
  'email.bounce',
  'email.complaint',
  'email.received',
  'contact.subscribed',
  'contact.unsubscribed',
  'campaign.sent',
  'workflow.completed',
  'workflow.failed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** What each type means, for the API documentation. */
export const WEBHOOK_EVENT_DESCRIPTIONS: Readonly<Record<WebhookEventType, string>> = {
  'email.sent': 'The relay accepted the email',
  'email.delivery': "The recipient's server accepted it (relay notification)",
  'email.open': 'First open of the email (tracking pixel; data.machine when a privacy proxy fetched it)',
  'email.click': 'First click of a tracked link in the email (data.url)',
  'email.bounce': 'Hard bounce (data.bounceType, bounceSubType, diagnosticCode when the relay gave them)',
  'email.complaint': 'The recipient marked it as spam (data.complaintFeedbackType when given)',
  'email.received': 'A message arrived at an inbound address of a verified domain (data.subject, from, to, text, attachments…; emailId and campaignId when it replies to one of ours)',
  'contact.subscribed': 'A contact was subscribed again',
  'contact.unsubscribed': 'A contact was unsubscribed (page, API, bounce, complaint, workflow)',
  'campaign.sent': 'A campaign finished sending: every email is sent or failed',
  'workflow.completed': 'A workflow execution ended (status COMPLETED, or EXITED by an EXIT step)',
  'workflow.failed': 'A workflow execution failed (data.error)',
};

/** The type of the signed ping of POST /webhook-endpoints/:id/test (never captured, not subscribable). */
export const TEST_EVENT_TYPE = 'webhook.test';
