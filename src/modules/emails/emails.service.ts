import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { notFound } from '../../http/errors.js';
import { isUuid } from '../../lib/uuid.js';
import { findProjectEmail, type ProjectEmailRow } from './emails.repo.js';
import type { Email } from './emails.schema.js';

const iso = (d: Date | null) => d?.toISOString() ?? null;

type EngagementRow = Pick<
  ProjectEmailRow,
  'open_count' | 'click_count' | 'created_at' | 'sent_at' | 'delivered_at' | 'opened_at' | 'clicked_at' | 'bounced_at' | 'complained_at' | 'failed_at'
>;

/** An email's counters and milestone times, as every email answer shows them. */
export const engagement = (row: EngagementRow) => ({
  openCount: row.open_count,
  clickCount: row.click_count,
  createdAt: row.created_at.toISOString(),
  sentAt: iso(row.sent_at),
  deliveredAt: iso(row.delivered_at),
  openedAt: iso(row.opened_at),
  clickedAt: iso(row.clicked_at),
  bouncedAt: iso(row.bounced_at),
  complainedAt: iso(row.complained_at),
  failedAt: iso(row.failed_at),
});

export function rowToEmail(row: ProjectEmailRow): Email {
  return {
    id: row.id,
    status: row.status,
    unconfirmed: row.unconfirmed,
    error: row.error,
    to: row.to_email,
    toName: row.to_name,
    from: row.from_email,
    fromName: row.from_name,
    subject: row.subject,
    type: row.type,
    source: row.source,
    messageId: row.message_id,
    contactId: row.contact_id,
    campaignId: row.campaign_id,
    templateId: row.template_id,
    attempts: row.attempts,
    ...engagement(row),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** One email of the project; another project's, an unknown or a malformed id is 404. */
export async function getEmail(db: Kysely<Database>, projectId: string, id: string): Promise<Email> {
  const row = isUuid(id) ? await findProjectEmail(db, projectId, id) : undefined;
  if (!row) throw notFound('Email');
  return rowToEmail(row);
}
