import { sql, type Transaction } from 'kysely';
import type { Database, EmailStatus } from '../../db/schema.js';

/**
 * Lifecycle order after sending (DESIGN §5): a later event never downgrades an email.
 * PENDING/SENDING come before all of these; FAILED and CANCELLED are terminal and set
 * only by the pipeline.
 */
export const STATUS_RANK: Record<EmailStatus, number> = {
  PENDING: 0,
  SENDING: 1,
  SENT: 2,
  DELIVERED: 3,
  OPENED: 4,
  CLICKED: 5,
  BOUNCED: 6,
  COMPLAINED: 7,
  FAILED: 8,
  CANCELLED: 8,
};

/** The system event recorded for each delivery-side status (DESIGN §5). */
export const STATUS_EVENT = {
  SENT: 'email.sent',
  DELIVERED: 'email.delivery',
  OPENED: 'email.open',
  CLICKED: 'email.click',
  BOUNCED: 'email.bounce',
  COMPLAINED: 'email.complaint',
} as const;
export type TrackedStatus = keyof typeof STATUS_EVENT;

const TIMESTAMP_COLUMN = {
  SENT: 'sent_at',
  DELIVERED: 'delivered_at',
  OPENED: 'opened_at',
  CLICKED: 'clicked_at',
  BOUNCED: 'bounced_at',
  COMPLAINED: 'complained_at',
} as const;

const rankCase = sql.raw(
  `CASE status ${Object.entries(STATUS_RANK)
    .map(([s, r]) => `WHEN '${s}' THEN ${r}`)
    .join(' ')} END`,
);

export interface StatusChange {
  /** True when this call set the milestone's timestamp for the first time. */
  first: boolean;
  contactId: string | null;
  projectId: string;
}

/**
 * Records a milestone on an email: its timestamp is set once (first occurrence), its
 * counter (opens, clicks) grows every time, and its status moves forward only: an open
 * after a click keeps CLICKED, a delivery after a bounce keeps BOUNCED. On the first
 * occurrence the matching `email.*` event is recorded for the contact, in this transaction.
 * FAILED and CANCELLED emails are left alone. Returns undefined for an unknown email.
 */
export async function recordMilestone(
  trx: Transaction<Database>,
  input: { emailId: string; status: TrackedStatus; data?: Record<string, unknown> },
): Promise<StatusChange | undefined> {
  const column = sql.ref(TIMESTAMP_COLUMN[input.status]);
  const rank = STATUS_RANK[input.status];
  const counter =
    input.status === 'OPENED' ? sql`, open_count = open_count + 1` : input.status === 'CLICKED' ? sql`, click_count = click_count + 1` : sql``;
  const { rows } = await sql<{ first: boolean; contact_id: string | null; project_id: string }>`
    WITH before AS (SELECT id, ${column} IS NULL AS first FROM emails WHERE id = ${input.emailId} FOR UPDATE)
    UPDATE emails e SET
      ${column} = coalesce(e.${column}, now()),
      status = CASE WHEN ${rankCase} < ${rank} THEN ${input.status} ELSE e.status END,
      -- The relay took it after all: a delivery, open… of an unconfirmed email confirms it.
      unconfirmed = false,
      updated_at = now()
      ${counter}
    FROM before b
    WHERE e.id = b.id AND e.status NOT IN ('FAILED', 'CANCELLED')
    RETURNING b.first, e.contact_id, e.project_id`.execute(trx);
  const row = rows[0];
  if (!row) return undefined;
  if (row.first && row.contact_id) {
    await sql`
      INSERT INTO events (project_id, contact_id, name, data)
      VALUES (${row.project_id}, ${row.contact_id}, ${STATUS_EVENT[input.status]},
              ${JSON.stringify({ emailId: input.emailId, ...input.data })}::jsonb)`.execute(trx);
  }
  return { first: row.first, contactId: row.contact_id, projectId: row.project_id };
}
