import { compact, recipientsOf, obj, type ProviderEvent, refOf, str } from './events.js';

/**
 * Postmark webhooks (https://postmarkapp.com/developer/webhooks/webhooks-overview): one JSON
 * record per request, `RecordType` Bounce, SpamComplaint or Delivery. Postmark replaces the
 * Message-ID and reports its own `MessageID`, so our email is found by Metadata (`email-id`,
 * set with an `X-PM-Metadata-email-id` header) or by the Message-ID headers quoted in a bounce's
 * `Content` (sent when "Include bounce content" is on).
 */

/** Bounce types that mean the address does not exist or will never be mailed again. */
const HARD = new Set(['HardBounce', 'BadEmailAddress', 'ManuallyDeactivated']);
/** Types that are not a delivery failure: auto-replies, (un)subscribe requests, relay tests… */
const NOT_BOUNCES = new Set([
  'Unsubscribe', 'Subscribe', 'AutoResponder', 'AddressChange', 'OpenRelayTest', 'VirusNotification', 'ChallengeVerification', 'InboundError', 'TemplateRenderingFailed',
]);
/** TypeCode → Type for the codes Postmark documents, when only the code is given. */
const TYPE_CODES: Record<number, string> = { 1: 'HardBounce', 2: 'Transient', 16: 'Unsubscribe', 32: 'Subscribe', 64: 'AutoResponder', 128: 'AddressChange', 256: 'DnsError', 512: 'SpamNotification', 1024: 'OpenRelayTest', 2048: 'Unknown', 4096: 'SoftBounce', 8192: 'VirusNotification', 16384: 'ChallengeVerification', 100000: 'BadEmailAddress', 100001: 'SpamComplaint', 100002: 'ManuallyDeactivated', 100003: 'Unconfirmed', 100006: 'Blocked', 100007: 'SMTPApiError', 100008: 'InboundError', 100009: 'DMARCPolicy', 100010: 'TemplateRenderingFailed' };

const QUOTED_MESSAGE_ID = /^Message-ID:[ \t]*(<[^>\r\n]{1,996}>)/gim;

export function parsePostmark(body: unknown): ProviderEvent[] {
  const r = obj(body);
  const recordType = str(r.RecordType);
  const metadata = obj(r.Metadata);
  const quoted = typeof r.Content === 'string' ? [...r.Content.slice(0, 256 * 1024).matchAll(QUOTED_MESSAGE_ID)].map((m) => m[1]) : [];
  const target = { ref: refOf(metadata, quoted), recipients: recipientsOf(r.Email, r.Recipient) };
  const id = str(r.ID);
  if (recordType === 'Delivery') return [{ kind: 'delivery', ...target, data: compact({ provider: 'postmark', smtpResponse: str(r.Details), deliveredAt: str(r.DeliveredAt) }) }];
  if (recordType !== 'Bounce' && recordType !== 'SpamComplaint') return [{ ignored: `Postmark RecordType ${recordType ?? '(none)'} is not acted on` }];
  const type = str(r.Type) ?? (typeof r.TypeCode === 'number' ? TYPE_CODES[r.TypeCode] : undefined) ?? 'Unknown';
  if (recordType === 'SpamComplaint' || type === 'SpamComplaint') {
    return [{ kind: 'complaint', ...target, data: compact({ provider: 'postmark', complaintFeedbackType: 'abuse', feedbackId: id }) }];
  }
  if (NOT_BOUNCES.has(type)) return [{ ignored: `Postmark bounce type ${type} is not a delivery failure` }];
  const data = compact({ provider: 'postmark', bounceType: HARD.has(type) ? 'Permanent' : 'Transient', bounceSubType: type, diagnosticCode: str(r.Details) ?? str(r.Description), feedbackId: id });
  // Without an ID (never in practice), the record's own fields name it.
  const reportKey = `postmark:${id ?? `${str(r.Email) ?? ''}:${str(r.BouncedAt) ?? ''}:${type}`}`;
  return [{ kind: 'bounce', permanent: HARD.has(type), reportKey, ...target, data }];
}
