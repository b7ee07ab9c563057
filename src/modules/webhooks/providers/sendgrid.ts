import { compact, recipientsOf, obj, type ProviderEvent, refOf, str } from './events.js';

/**
 * SendGrid Event Webhook (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event):
 * a JSON array of events. Mail relayed over SMTP keeps our Message-ID, reported as `smtp-id`;
 * custom args (`email_id`, from an X-SMTPAPI header) sit on the event itself.
 */
export function parseSendgrid(body: unknown): ProviderEvent[] {
  if (!Array.isArray(body)) return [{ ignored: 'SendGrid body is not an array of events' }];
  return body.slice(0, 5_000).map((item): ProviderEvent => {
    const e = obj(item);
    const event = str(e.event);
    const target = { ref: refOf(e, [e['smtp-id']]), recipients: recipientsOf(e.email) };
    const id = str(e.sg_event_id);
    const reason = str(e.reason) ?? str(e.response);
    if (event === 'delivered') return { kind: 'delivery', ...target, data: compact({ provider: 'sendgrid', smtpResponse: str(e.response), eventId: id }) };
    if (event === 'spamreport') return { kind: 'complaint', ...target, data: compact({ provider: 'sendgrid', complaintFeedbackType: 'abuse', feedbackId: id }) };
    if (event === 'bounce' || event === 'dropped') {
      if (!id) return { ignored: `SendGrid ${event} event without sg_event_id` };
      let permanent: boolean;
      if (event === 'bounce') {
        // type "bounce": the receiver refused the address; "blocked": a temporary refusal.
        permanent = str(e.type) !== 'blocked';
      } else {
        // Dropped: SendGrid would not send. Only its address lists mean the address is dead.
        if (/spam reporting/i.test(reason ?? '')) return { kind: 'complaint', ...target, data: compact({ provider: 'sendgrid', complaintFeedbackType: 'abuse', feedbackId: id, reason }) };
        if (!/bounced address|invalid/i.test(reason ?? '')) return { ignored: `SendGrid dropped event (${reason ?? 'no reason'}) is not a delivery failure` };
        permanent = true;
      }
      const data = compact({ provider: 'sendgrid', bounceType: permanent ? 'Permanent' : 'Transient', bounceSubType: event === 'dropped' ? 'Dropped' : str(e.type), diagnosticCode: [str(e.status), reason].filter(Boolean).join(' '), feedbackId: id });
      return { kind: 'bounce', permanent, reportKey: `sendgrid:${id}`, ...target, data };
    }
    return { ignored: `SendGrid event ${event ?? '(none)'} is not acted on` };
  });
}
