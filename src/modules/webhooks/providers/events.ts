import type { EmailRef, FeedbackEvent } from '../../bounces/index.js';

/**
 * What a provider's event becomes: the feedback event for the shared path (src/modules/bounces)
 * and how to find our email, or the reason it is ignored.
 */
export type ProviderEvent = (FeedbackEvent & Target) | { ignored: string };

/**
 * How to find the email, and the recipient addresses the event is about (lower case; empty when
 * it names none): an email found whose recipient is not among them is not the event's.
 */
export interface Target {
  ref: EmailRef;
  recipients: string[];
}

/** The recipient addresses of an event, lower case. */
export const recipientsOf = (...values: unknown[]): string[] =>
  values.flatMap((v) => (Array.isArray(v) ? v : [v])).flatMap((v) => (typeof v === 'string' && v.includes('@') ? [v.trim().toLowerCase()] : []));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Metadata keys (Postmark Metadata, Mailgun user-variables, SendGrid custom args, Resend tags) that name our email. */
const EMAIL_ID_KEYS = ['email-id', 'email_id', 'emailId'];
const MESSAGE_ID_KEYS = ['message-id', 'message_id', 'messageId'];

/** Every form (with and without <>) of the Message-IDs given; at most 8. */
export function messageIdForms(values: readonly unknown[]): string[] {
  const ids = new Set<string>();
  for (const value of values) {
    if (typeof value !== 'string') continue;
    const bare = value.trim().replace(/^<(.*)>$/, '$1').trim();
    if (!bare || bare.length > 998) continue;
    ids.add(bare);
    ids.add(`<${bare}>`);
  }
  return [...ids].slice(0, 8);
}

/** A record of string values from an object or from a list of `{ name, value }` pairs. */
export function pairs(value: unknown): Record<string, unknown> {
  if (Array.isArray(value)) {
    const out: Record<string, unknown> = {};
    for (const item of value) {
      if (item && typeof item === 'object' && 'name' in item && 'value' in item && typeof item.name === 'string') out[item.name] = item.value;
    }
    return out;
  }
  return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
}

/** The value of a header (case-insensitive name) in a record of headers. */
export function header(headers: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}

/**
 * How the event names our email: an email id in metadata (a UUID) first, else the Message-IDs
 * it quotes (our Message-ID header, `<emailId@from-domain>`, or one in metadata).
 */
export function refOf(metadata: Record<string, unknown>, messageIds: readonly unknown[]): EmailRef {
  for (const key of EMAIL_ID_KEYS) {
    const value = metadata[key];
    if (typeof value === 'string' && UUID.test(value.trim())) return { emailId: value.trim().toLowerCase() };
  }
  return { messageIds: messageIdForms([...messageIds, ...MESSAGE_ID_KEYS.map((k) => metadata[k])]) };
}

/** Drops undefined values so stored event data stays small and clean. */
export const compact = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).filter(([, v]) => v !== undefined && v !== null && v !== ''));

export const str = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined);
export const obj = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
