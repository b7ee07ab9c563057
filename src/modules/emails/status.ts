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
 * An open with `opener` may be judged a machine's (docs/analytics.md "Machine opens"): it still
 * sets opened_at and records email.open (with `machine: true`), but not human_opened_at.
 * FAILED and CANCELLED emails are left alone. Returns undefined for an unknown email.
 */
export async function recordMilestone(
  trx: Transaction<Database>,
  input: { emailId: string; status: TrackedStatus; data?: Record<string, unknown>; opener?: OpenSignal },
): Promise<StatusChange | undefined> {
  const column = sql.ref(TIMESTAMP_COLUMN[input.status]);
  const rank = STATUS_RANK[input.status];
  const { rows } = await sql<{ first: boolean; machine: boolean; contact_id: string | null; project_id: string }>`
    WITH before AS (
      SELECT id, ${column} IS NULL AS first, ${input.status === 'OPENED' ? isMachineOpen(input.opener) : sql`false`} AS machine
      FROM emails WHERE id = ${input.emailId} FOR UPDATE
    )
    UPDATE emails e SET
      ${column} = coalesce(e.${column}, now()),
      status = CASE WHEN ${rankCase} < ${rank} THEN ${input.status} ELSE e.status END,
      -- The relay took it after all: a delivery, open… of an unconfirmed email confirms it.
      unconfirmed = false,
      updated_at = now()
      ${counters(input.status)}
    FROM before b
    WHERE e.id = b.id AND e.status NOT IN ('FAILED', 'CANCELLED')
    RETURNING b.first, b.machine, e.contact_id, e.project_id`.execute(trx);
  const row = rows[0];
  if (!row) return undefined;
  if (row.first && row.contact_id) {
    await sql`
      INSERT INTO events (project_id, contact_id, name, data)
      VALUES (${row.project_id}, ${row.contact_id}, ${STATUS_EVENT[input.status]},
              ${JSON.stringify({ emailId: input.emailId, ...input.data, ...(row.machine && { machine: true }) })}::jsonb)`.execute(trx);
  }
  return { first: row.first, contactId: row.contact_id, projectId: row.project_id };
}

/**
 * How an open request looked (the analytics facade's `classifyOpener`, docs/analytics.md
 * "Machine opens"): `machine` whenever it comes; `proxy` only within `prefetchWindowSeconds` of
 * the email's sending or delivery; `unknown` (or no signal) is a person.
 */
export interface OpenSignal {
  kind: 'machine' | 'proxy' | 'unknown';
  prefetchWindowSeconds: number;
}

/** The open about to be recorded is a machine's (SQL over the locked email's own times). */
function isMachineOpen(opener: OpenSignal | undefined) {
  if (opener?.kind === 'machine') return sql`true`;
  if (opener?.kind !== 'proxy') return sql`false`;
  const window = sql`make_interval(secs => ${opener.prefetchWindowSeconds})`;
  return sql`coalesce(now() <= sent_at + ${window} OR now() <= delivered_at + ${window}, false)`;
}

/**
 * Counters of hits, and the first human open: every open bumps open_count, a machine's also
 * machine_open_count, a person's sets human_opened_at once; a click bumps click_count and
 * implies a human open.
 */
function counters(status: TrackedStatus) {
  if (status === 'OPENED') {
    return sql`, open_count = e.open_count + 1, machine_open_count = e.machine_open_count + b.machine::int,
      human_opened_at = CASE WHEN b.machine THEN e.human_opened_at ELSE coalesce(e.human_opened_at, now()) END`;
  }
  if (status === 'CLICKED') return sql`, click_count = e.click_count + 1, human_opened_at = coalesce(e.human_opened_at, now())`;
  return sql``;
}
