import { type Kysely, sql } from 'kysely';
import type { Database, EmailType, TrackingMode } from '../../db/schema.js';
import type { CampaignRecipient } from '../emails/emails.repo.js';
import type { Tokens } from '../../lib/tokens.js';
import { subscriptionUrls } from '../../mail/compliance.js';
import { renderTemplate } from '../../mail/render.js';

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
 * CURRENT data (read with the email, no extra query), its address and the subscription links. A
 * MARKETING email to a contact who unsubscribed since the fan-out, or to a deleted contact, is
 * CANCELLED instead (only if still PENDING: exactly once).
 */
export async function personaliseCampaignEmail(
  db: Kysely<Database>,
  email: CampaignEmailRef,
  deps: { tokens: Tokens; publicUrl: string },
): Promise<Personalised> {
  const row = email.recipient;
  let reason: string | undefined;
  if (row.id === null || row.email === null) reason = CAMPAIGN_CONTACT_GONE;
  else if (email.type === 'MARKETING' && row.subscribed !== true) reason = CAMPAIGN_UNSUBSCRIBED;
  if (reason !== undefined || row.id === null || row.email === null) {
    const why = reason ?? CAMPAIGN_CONTACT_GONE;
    await db
      .updateTable('emails')
      .set({ status: 'CANCELLED', error: why, updated_at: sql`now()` })
      .where('id', '=', email.id)
      .where('status', '=', 'PENDING')
      .execute();
    return { kind: 'cancelled', reason: why };
  }
  const urls = subscriptionUrls(
    { emailId: email.id, projectId: email.projectId, contactId: row.id, type: email.type, tracking: email.tracking },
    deps,
  );
  const vars = { ...(row.data ?? {}), email: row.email, ...urls };
  return {
    kind: 'render',
    // A variable must not smuggle a line break into the Subject header.
    subject: renderTemplate(email.subject, vars, { escape: false }).replace(/[\r\n]+/g, ' '),
    html: renderTemplate(email.html, vars, { escape: true }),
  };
}
