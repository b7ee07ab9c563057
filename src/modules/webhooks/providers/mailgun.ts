import { compact, recipientsOf, header, obj, type ProviderEvent, refOf, str } from './events.js';

/**
 * Mailgun webhooks (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/):
 * `{ signature, "event-data" }`, one event per request. Mailgun keeps our Message-ID and reports
 * it (without <>) in `event-data.message.headers["message-id"]`; `user-variables.email-id` is
 * taken too.
 */
export function parseMailgun(body: unknown): ProviderEvent[] {
  const e = obj(obj(body)['event-data']);
  const event = str(e.event);
  const target = { ref: refOf(obj(e['user-variables']), [header(obj(obj(e.message).headers), 'message-id')]), recipients: recipientsOf(e.recipient) };
  const status = obj(e['delivery-status']);
  const id = str(e.id);
  if (event === 'delivered') return [{ kind: 'delivery', ...target, data: compact({ provider: 'mailgun', smtpResponse: str(status.message) ?? str(status.description), eventId: id }) }];
  if (event === 'complained') return [{ kind: 'complaint', ...target, data: compact({ provider: 'mailgun', complaintFeedbackType: 'abuse', feedbackId: id }) }];
  if (event === 'failed') {
    const permanent = e.severity === 'permanent';
    const code = str(status.code);
    const diagnostic = [code, str(status.description) || str(status.message)].filter(Boolean).join(' ');
    const data = compact({ provider: 'mailgun', bounceType: permanent ? 'Permanent' : 'Transient', bounceSubType: str(e.reason), diagnosticCode: diagnostic, feedbackId: id });
    if (!id) return [{ ignored: 'Mailgun failed event without an id' }];
    return [{ kind: 'bounce', permanent, reportKey: `mailgun:${id}`, ...target, data }];
  }
  return [{ ignored: `Mailgun event ${event ?? '(none)'} is not acted on` }];
}
