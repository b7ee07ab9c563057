import { sql, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { STATUS_EVENT, STATUS_RANK, type StatusChange } from './status.js';

/**
 * The batch form of {@link import('./status.js').recordMilestone} for the milestones without
 * counters (sent, delivery, bounce, complaint): what a batch of relay reports records
 * (src/modules/bounces, docs/bounces.md "Throughput"). Opens and clicks stay one at a time.
 */
export type BatchStatus = 'SENT' | 'DELIVERED' | 'BOUNCED' | 'COMPLAINED';

export interface MilestoneInput {
  emailId: string;
  status: BatchStatus;
  /** Goes into the email.* event, after `emailId`. */
  data?: Record<string, unknown>;
}

const BATCH_STATUSES: readonly BatchStatus[] = ['SENT', 'DELIVERED', 'BOUNCED', 'COMPLAINED'];

const rankCase = sql.raw(
  `CASE e.status ${Object.entries(STATUS_RANK)
    .map(([s, r]) => `WHEN '${s}' THEN ${r}`)
    .join(' ')} END`,
);

interface Row {
  id: string;
  contact_id: string | null;
  project_id: string;
  sent_first: boolean;
  delivered_first: boolean;
  bounced_first: boolean;
  complained_first: boolean;
}

/**
 * Records milestones on many emails with the outcome of calling recordMilestone for each input
 * in order, in three statements whatever their number: one UPDATE of every email (rows locked in
 * id order), one INSERT of the email.* events (in input order), nothing per email.
 * - Each email's timestamps are set once; its status moves forward only, to the highest-ranked of
 *   its current status and its inputs' (an email bounced and complained in one batch ends
 *   COMPLAINED with both times, as two calls would leave it); `unconfirmed` is cleared.
 * - `first` is true for the first input of an (email, status) that set the timestamp; a later
 *   input of the same pair, or one whose timestamp was already set, is not first (no event).
 * - FAILED and CANCELLED emails are left alone and, like unknown ones, answer undefined.
 * The emails' triggers (project and analytics counters) fire per changed row, as for single calls.
 */
export async function recordMilestones(trx: Transaction<Database>, inputs: readonly MilestoneInput[]): Promise<(StatusChange | undefined)[]> {
  if (inputs.length === 0) return [];
  // Per email: which milestones its inputs name, and the highest-ranked status among them.
  const perEmail = new Map<string, { statuses: Set<BatchStatus>; top: BatchStatus }>();
  for (const input of inputs) {
    if (!BATCH_STATUSES.includes(input.status)) throw new Error(`recordMilestones: ${String(input.status)} has counters; use recordMilestone`);
    const entry = perEmail.get(input.emailId);
    if (!entry) perEmail.set(input.emailId, { statuses: new Set([input.status]), top: input.status });
    else {
      entry.statuses.add(input.status);
      if (STATUS_RANK[input.status] > STATUS_RANK[entry.top]) entry.top = input.status;
    }
  }
  const ids = [...perEmail.keys()];
  const has = (s: BatchStatus) => ids.map((id) => perEmail.get(id)?.statuses.has(s) ?? false);
  const set = (column: string, s: BatchStatus) => {
    const c = sql.ref(`e.${column}`);
    return sql`${sql.ref(column)} = CASE WHEN i.${sql.ref(s.toLowerCase())} THEN coalesce(${c}, now()) ELSE ${c} END`;
  };
  const { rows } = await sql<Row>`
    WITH i AS (
      SELECT * FROM unnest(${ids}::uuid[], ${ids.map((id) => perEmail.get(id)?.top)}::text[], ${has('SENT')}::bool[],
                           ${has('DELIVERED')}::bool[], ${has('BOUNCED')}::bool[], ${has('COMPLAINED')}::bool[])
        AS i(id, top, sent, delivered, bounced, complained)
    ),
    before AS (
      SELECT e.id, e.sent_at IS NULL AS sent_first, e.delivered_at IS NULL AS delivered_first,
             e.bounced_at IS NULL AS bounced_first, e.complained_at IS NULL AS complained_first
      FROM emails e JOIN i ON i.id = e.id
      ORDER BY e.id
      FOR UPDATE OF e
    )
    UPDATE emails e SET
      ${set('sent_at', 'SENT')}, ${set('delivered_at', 'DELIVERED')}, ${set('bounced_at', 'BOUNCED')}, ${set('complained_at', 'COMPLAINED')},
      status = CASE WHEN ${rankCase} < CASE i.top ${sql.raw(BATCH_STATUSES.map((s) => `WHEN '${s}' THEN ${STATUS_RANK[s]}`).join(' '))} END
                    THEN i.top ELSE e.status END,
      -- The relay took it after all: a delivery, bounce… of an unconfirmed email confirms it.
      unconfirmed = false,
      updated_at = now()
    FROM before b JOIN i ON i.id = b.id
    WHERE e.id = b.id AND e.status NOT IN ('FAILED', 'CANCELLED')
    RETURNING e.id, e.contact_id, e.project_id, b.sent_first, b.delivered_first, b.bounced_first, b.complained_first`.execute(trx);
  const byId = new Map(rows.map((r) => [r.id, r]));

  const seen = new Set<string>();
  const events: { projectId: string; contactId: string; name: string; data: string }[] = [];
  const changes = inputs.map((input): StatusChange | undefined => {
    const row = byId.get(input.emailId);
    if (!row) return undefined;
    const key = `${input.emailId}\n${input.status}`;
    const first = !seen.has(key) && row[`${input.status.toLowerCase() as Lowercase<BatchStatus>}_first`];
    seen.add(key);
    if (first && row.contact_id) {
      events.push({ projectId: row.project_id, contactId: row.contact_id, name: STATUS_EVENT[input.status], data: JSON.stringify({ emailId: input.emailId, ...input.data }) });
    }
    return { first, contactId: row.contact_id, projectId: row.project_id };
  });
  if (events.length > 0) {
    await sql`
      INSERT INTO events (project_id, contact_id, name, data)
      SELECT project_id, contact_id, name, data
      FROM unnest(${events.map((e) => e.projectId)}::uuid[], ${events.map((e) => e.contactId)}::uuid[], ${events.map((e) => e.name)}::text[],
                  ${events.map((e) => e.data)}::jsonb[]) WITH ORDINALITY AS v(project_id, contact_id, name, data, n)
      ORDER BY n`.execute(trx);
  }
  return changes;
}
