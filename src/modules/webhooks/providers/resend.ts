import { compact, recipientsOf, header, obj, pairs, type ProviderEvent, refOf, str } from './events.js';

/**
 * Resend webhooks (https://resend.com/docs/webhooks): `{ type, created_at, data }`, delivered by
 * Svix. Our email is found by the Message-ID in `data.headers` when Resend echoes the headers,
 * or by a tag `email_id` (`data.tags`, an object or a list of `{ name, value }`).
 */
export function parseResend(body: unknown, svixId: string): ProviderEvent[] {
  const b = obj(body);
  const type = str(b.type);
  const d = obj(b.data);
  const target = { ref: refOf(pairs(d.tags), [header(pairs(d.headers), 'message-id')]), recipients: recipientsOf(d.to) };
  const base = { provider: 'resend', resendEmailId: str(d.email_id) };
  if (type === 'email.delivered') return [{ kind: 'delivery', ...target, data: compact(base) }];
  if (type === 'email.complained') return [{ kind: 'complaint', ...target, data: compact({ ...base, complaintFeedbackType: 'abuse', feedbackId: svixId }) }];
  if (type === 'email.delivery_delayed') return [{ kind: 'delay', ...target, data: compact({ ...base, bounceType: 'Delayed' }) }];
  if (type === 'email.bounced') {
    const bounce = obj(d.bounce);
    // Resend relays through Amazon SES: its bounce types are SES's (Permanent, Transient, Undetermined).
    const permanent = str(bounce.type) === 'Permanent';
    const data = compact({ ...base, bounceType: permanent ? 'Permanent' : (str(bounce.type) ?? 'Transient'), bounceSubType: str(bounce.subType), diagnosticCode: str(bounce.message), feedbackId: svixId });
    return [{ kind: 'bounce', permanent, reportKey: `resend:${svixId}`, ...target, data }];
  }
  return [{ ignored: `Resend event ${type ?? '(none)'} is not acted on` }];
}
