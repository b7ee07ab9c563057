import { SourceRank, typeOfEventName } from './activity.rules.js';
import type { ActivityItem } from './activity.schema.js';
import type { FeedRow } from './feed.repo.js';

const ref = (id: string | null, name: string | null) => (id ? { id, name: name ?? '' } : undefined);

/** Keys whose value is undefined are left out: metadata names only what applies. */
function defined(entries: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined));
}

function eventMetadata(row: FeedRow, type: ActivityItem['type']): Record<string, unknown> {
  const data = row.data ?? {};
  if (type === 'event.tracked') return { name: row.name, data };
  if (type === 'segment.entry' || type === 'segment.exit') {
    const id = typeof data.segmentId === 'string' ? data.segmentId : null;
    const name = typeof data.segmentName === 'string' ? data.segmentName : null;
    return defined({ segment: ref(id, name), eventName: row.name });
  }
  if (type.startsWith('email.')) {
    // The event's own fields (url of a click, bounceType, smtpResponse…), then the email's names.
    const { emailId: _emailId, ...rest } = data;
    return defined({
      ...rest,
      emailId: row.email_id ?? undefined,
      // email.received: its own subject; emailId/campaign name the email it replies to.
      subject: type === 'email.received' ? rest.subject : row.email_found ? (row.email_subject ?? '') : undefined,
      campaign: ref(row.campaign_id, row.campaign_name),
      template: ref(row.template_id, row.template_name),
      workflow: ref(row.workflow_id, row.workflow_name),
    });
  }
  return {};
}

/** A page row as the API's item (docs/activity.md, "Items"). */
export function rowToItem(row: FeedRow): ActivityItem {
  const timestamp = row.ts.toISOString();
  const contact = row.contact_id && row.contact_email ? { contact: { id: row.contact_id, email: row.contact_email } } : {};
  const data = row.data ?? {};
  switch (row.rank) {
    case SourceRank.event: {
      const type = typeOfEventName(row.name);
      return { id: row.id, type, timestamp, ...contact, metadata: eventMetadata(row, type) };
    }
    case SourceRank.campaignScheduled:
    case SourceRank.campaignSent: {
      const type = row.rank === SourceRank.campaignSent ? 'campaign.sent' : 'campaign.scheduled';
      return {
        id: `${row.id}:${type === 'campaign.sent' ? 'sent' : 'scheduled'}`,
        type,
        timestamp,
        metadata: { campaign: ref(row.campaign_id ?? row.id, row.campaign_name), ...data },
      };
    }
    case SourceRank.workflowStarted:
    case SourceRank.workflowEnded: {
      const type = row.rank === SourceRank.workflowStarted ? 'workflow.started' : row.name === 'workflow.failed' ? 'workflow.failed' : 'workflow.completed';
      return {
        id: `${row.id}:${type.slice('workflow.'.length)}`,
        type,
        timestamp,
        ...contact,
        metadata: defined({ workflow: ref(row.workflow_id, row.workflow_name), execution: { id: row.id }, ...data }),
      };
    }
  }
}
