import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { FeedbackEvent } from '../bounces/index.js';

/**
 * The SES event inside an SNS notification's `Message`: the classic notification format
 * (`notificationType`) and configuration-set event publishing (`eventType`) share the
 * fields read here. https://docs.aws.amazon.com/ses/latest/dg/notification-contents.html
 */
const SesEvent = z.looseObject({
  notificationType: z.string().optional(),
  eventType: z.string().optional(),
  mail: z.looseObject({
    messageId: z.string(),
    commonHeaders: z.looseObject({ messageId: z.string().optional() }).optional(),
    headers: z.array(z.looseObject({ name: z.string(), value: z.string() })).optional(),
  }),
  bounce: z
    .looseObject({
      bounceType: z.string(),
      bounceSubType: z.string().optional(),
      feedbackId: z.string().optional(),
      timestamp: z.string().optional(),
      bouncedRecipients: z.array(z.looseObject({ emailAddress: z.string(), diagnosticCode: z.string().optional() })).optional(),
    })
    .optional(),
  complaint: z
    .looseObject({
      complaintFeedbackType: z.string().optional(),
      feedbackId: z.string().optional(),
      timestamp: z.string().optional(),
    })
    .optional(),
  delivery: z
    .looseObject({
      timestamp: z.string().optional(),
      smtpResponse: z.string().optional(),
      processingTimeMillis: z.number().optional(),
    })
    .optional(),
});
type SesEvent = z.infer<typeof SesEvent>;

/** What the shared feedback path (src/modules/bounces) acts on, and the Message-IDs that find the email. */
export type DeliveryEvent = FeedbackEvent & { messageIds: string[] };

/**
 * Every form our Message-ID can take in the event: SES's own id (`mail.messageId`), and the
 * original header (`commonHeaders.messageId`, `headers`), each with and without `<>`.
 */
export function messageIdCandidates(mail: SesEvent['mail']): string[] {
  const raw = [
    mail.messageId,
    mail.commonHeaders?.messageId,
    ...(mail.headers ?? []).filter((h) => h.name.toLowerCase() === 'message-id').map((h) => h.value),
  ];
  const ids = new Set<string>();
  for (const value of raw) {
    const bare = value?.trim().replace(/^<(.*)>$/, '$1').trim();
    if (!bare || bare.length > 998) continue;
    ids.add(bare);
    ids.add(`<${bare}>`);
  }
  return [...ids].slice(0, 8);
}

/** Drops undefined values so stored event data stays small and clean. */
const compact = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined));

/**
 * The delivery event in an SNS `Message`, or the reason it is ignored (not JSON, not an SES
 * event, or a type the service does not act on: Send, Reject, Open, Click, DeliveryDelay…).
 */
export function parseSesEvent(message: string): DeliveryEvent | { ignored: string } {
  let json: unknown;
  try {
    json = JSON.parse(message);
  } catch {
    return { ignored: 'Message is not JSON' };
  }
  const parsed = SesEvent.safeParse(json);
  if (!parsed.success) return { ignored: 'Message is not an SES event' };
  const event = parsed.data;
  const type = event.notificationType ?? event.eventType;
  const messageIds = messageIdCandidates(event.mail);
  if (type === 'Delivery') {
    const d = event.delivery;
    return { kind: 'delivery', messageIds, data: compact({ smtpResponse: d?.smtpResponse, processingTimeMillis: d?.processingTimeMillis }) };
  }
  if (type === 'Bounce' && event.bounce) {
    const b = event.bounce;
    const data = compact({
      bounceType: b.bounceType,
      bounceSubType: b.bounceSubType,
      diagnosticCode: b.bouncedRecipients?.[0]?.diagnosticCode,
      feedbackId: b.feedbackId,
    });
    // SES's feedbackId names the report; without one, the notification's own bytes do.
    const reportKey = b.feedbackId ? `ses:${b.feedbackId}` : `ses-sha256:${createHash('sha256').update(message).digest('hex')}`;
    return { kind: 'bounce', permanent: b.bounceType === 'Permanent', reportKey, messageIds, data };
  }
  if (type === 'Complaint') {
    const c = event.complaint;
    return { kind: 'complaint', messageIds, data: compact({ complaintFeedbackType: c?.complaintFeedbackType, feedbackId: c?.feedbackId }) };
  }
  return { ignored: `event type ${type ?? '(none)'} is not acted on` };
}
