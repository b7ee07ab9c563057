import type { Config } from '../../../config.js';

/**
 * Headers each outgoing email carries for the relay's webhooks to name it (docs/bounces.md
 * "Finding our email"): with Postmark webhooks configured, `X-PM-Metadata-email-id` (Postmark
 * replaces our Message-ID, echoes its metadata in every event and strips the header before
 * delivery). Undefined when no provider needs one.
 */
export function relayHeadersOf(config: Pick<Config, 'providerWebhooks'>): ((emailId: string) => Record<string, string>) | undefined {
  if (!config.providerWebhooks.postmark) return undefined;
  return (emailId) => ({ 'X-PM-Metadata-email-id': emailId });
}
