import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Logger, Outcome } from './feedback.service.js';
import { findStoredFeedback, type StoredFeedback } from './inbound.repo.js';
import { applyReceivedIn, classifyReceived } from './inbound.service.js';

export type ReplayResult =
  | { applied: false; row: StoredFeedback; reason: string }
  | { applied: true; row: StoredFeedback; kind: string; outcome: Outcome | 'ignored'; changed: boolean };

/** Outcomes that change nothing: the report was applied before (or applies to nothing). */
const UNCHANGED: ReadonlySet<string> = new Set(['duplicate', 'ignored', 'unknown-email', 'not-trackable']);

/**
 * Re-applies a stored report (inbound_feedback) through the shared feedback path, in one
 * transaction, storing nothing new (the operator CLI, docs/bounces.md "Replaying a stored
 * report"). Idempotent as any received report: a hard bounce or complaint already recorded, or a
 * soft bounce already counted (same report key), answers `duplicate` and changes nothing.
 * Reports sent to inbound-domain addresses (no VERP email) name no email: nothing to apply.
 */
export async function replayStoredFeedback(db: Kysely<Database>, id: string, log: Logger, opts: { autoDisable: boolean }): Promise<ReplayResult | undefined> {
  const row = await findStoredFeedback(db, id);
  if (!row) return undefined;
  if (!row.email_id) return { applied: false, row, reason: 'it names no email of ours (not sent to a VERP address, or the instance\'s own mail)' };
  const classified = await classifyReceived({
    raw: row.raw,
    size: row.raw_size,
    remoteAddress: row.remote_address,
    helo: row.helo,
    mailFrom: row.mail_from,
    recipients: [{ address: row.rcpt_to, emailId: row.email_id }],
  });
  const [outcomes = []] = await db.transaction().execute((trx) => applyReceivedIn(trx, [classified], log, { ...opts, store: false }));
  const outcome = outcomes[0] ?? 'ignored';
  return { applied: true, row, kind: classified.parsed.classification.kind, outcome, changed: !UNCHANGED.has(outcome) };
}
