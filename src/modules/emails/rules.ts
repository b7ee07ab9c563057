import type { EmailType } from '../../db/schema.js';

/**
 * The rules every sender applies to a recipient before writing the email row (/v1/send, campaign
 * test sends through the suppression facade, workflow steps; the campaign fan-out applies the
 * same ones in its SQL). A blocked email is still written, CANCELLED with the reason, without a job.
 */

/** Why an accepted email is not delivered (its row is CANCELLED with this reason). */
export const UNSUBSCRIBED_MARKETING = 'Not sent: the contact is unsubscribed and this is a MARKETING email';

/**
 * Why this email must not be sent, or null: the address's suppression note first (it applies
 * to every type of email, transactional included), then MARKETING mail to an unsubscribed contact.
 */
export function blockedReason(suppressed: string | undefined, type: EmailType, subscribed: boolean): string | null {
  return suppressed ?? (type === 'MARKETING' && !subscribed ? UNSUBSCRIBED_MARKETING : null);
}
