import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.js';
import type { Tokens } from '../../../lib/tokens.js';
import type { EmailType, TrackingMode } from '../../../mail/compliance.js';
import { renderForRecipient } from '../../../mail/personalise.js';
import { type CampaignRecipient, markCancelled } from '../emails.repo.js';

/** Why a materialised campaign email is not delivered (its row becomes CANCELLED with this). */
export const CAMPAIGN_UNSUBSCRIBED = 'Not sent: the contact unsubscribed before this MARKETING campaign email was delivered';
export const CAMPAIGN_CONTACT_GONE = 'Not sent: the contact was deleted before this campaign email was delivered';

export interface CampaignEmailRef {
  id: string;
  projectId: string;
  type: EmailType;
  tracking: TrackingMode;
  subject: string;
  html: string;
  /** The contact as read with the email at delivery (findEmailForDelivery). */
  recipient: CampaignRecipient;
}

export type Personalised = { kind: 'render'; subject: string; html: string } | { kind: 'cancelled'; reason: string };

/**
 * Campaign emails are stored with the campaign's subject and body templates (fan-out is one
 * INSERT … SELECT, no rendering per row); this renders one at delivery with the contact's
 * CURRENT data (read with the email, no extra query), its address and the subscription links
 * (renderForRecipient, as every sender). A MARKETING email to a contact who unsubscribed since
 * the fan-out, or to a deleted contact, is CANCELLED instead (only if still PENDING: exactly once).
 */
export async function personaliseCampaignEmail(
  db: Kysely<Database>,
  email: CampaignEmailRef,
  deps: { tokens: Tokens; publicUrl: string },
): Promise<Personalised> {
  const row = email.recipient;
  if (row.id === null || row.email === null || (email.type === 'MARKETING' && row.subscribed !== true)) {
    const reason = row.id === null || row.email === null ? CAMPAIGN_CONTACT_GONE : CAMPAIGN_UNSUBSCRIBED;
    await markCancelled(db, email.id, reason);
    return { kind: 'cancelled', reason };
  }
  const content = renderForRecipient(
    { subject: email.subject, html: email.html },
    { emailId: email.id, projectId: email.projectId, contactId: row.id, email: row.email, data: row.data },
    deps,
  );
  return { kind: 'render', ...content };
}
