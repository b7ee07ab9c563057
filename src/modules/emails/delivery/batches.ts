import type { Kysely } from 'kysely';
import type { Database } from '../../../db/schema.js';
import { GroupCommit, type Outcome } from '../../../lib/group-commit.js';
import { markEndOfData, stageKey } from '../delivery-stage.repo.js';
import { type DeliveryEmail, findEmailsForDelivery, MAX_DELIVERY_READ, markSending, markSent, type SentMark } from '../emails.repo.js';

/**
 * The statements every delivery makes (read the email, SENDING, end of data, SENT), shared by the
 * deliveries that reach the same step together: one statement and one commit for all of them
 * instead of one each (the worker runs many jobs at once; bench/send.md, docs/performance.md).
 * Each delivery still sees its own outcome, as if it had run its statement alone: the protocol of
 * delivery.ts is unchanged. A read, end-of-data or SENT statement that fails is run again for each
 * of its deliveries alone (lib/group-commit.ts; all three may run twice), so one email's error
 * (a subject PostgreSQL refuses, say) never fails its batch-mates.
 */
export interface DeliveryBatches {
  /** The email as delivery needs it; undefined when there is no such email. */
  load(emailId: string): Promise<DeliveryEmail | undefined>;
  /** PENDING → SENDING: the attempt's number, or undefined when it was not PENDING. */
  sending(emailId: string): Promise<number | undefined>;
  /** The end-of-data stage of that attempt: false when the email is no longer in it. */
  endOfData(emailId: string, attempt: number): Promise<boolean>;
  /** SENT (see `markSent`): false when the email was FAILED or CANCELLED meanwhile. */
  sent(mark: SentMark): Promise<boolean>;
}

/**
 * A batcher of one statement: what is submitted while its previous batch runs goes in the next
 * (one batch in flight, so a busy worker makes fewer, larger statements); an idle one runs at the
 * end of the event loop's turn, or after `waitMs`.
 */
function statement<T, R>(
  name: string,
  run: (items: readonly T[]) => Promise<R[]>,
  opts: { split?: boolean; waitMs?: number } = {},
): (item: T) => Promise<R> {
  const batcher = new GroupCommit<T, R>({
    metricName: `delivery_${name}`,
    run: async (_group, items): Promise<Outcome<R>[]> => (await run(items)).map((value) => ({ ok: true, value })),
    groupOf: () => '',
    maxBatchSize: MAX_DELIVERY_READ,
    maxWaitMs: opts.waitMs ?? 0,
    maxInFlight: 1,
    maxInFlightPerGroup: 1,
    splitFailedBatches: opts.split ?? true,
  });
  return (item) => batcher.submit(item);
}

/**
 * Marks the first item of each email (or of each `keyOf`) only: two deliveries of one email in a
 * batch (a job run again while its previous run still waits) must not both own the same attempt.
 */
function firstOfEach<T extends { emailId: string }>(
  items: readonly T[],
  found: (item: T) => boolean,
  keyOf: (item: T) => string = (i) => i.emailId,
): boolean[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const key = keyOf(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return found(item);
  });
}

export function createDeliveryBatches(db: Kysely<Database>): DeliveryBatches {
  const load = statement<string, DeliveryEmail | undefined>('load', async (ids) => {
    const found = await findEmailsForDelivery(db, [...new Set(ids)]);
    return ids.map((id) => found.get(id));
  });
  const sending = statement<{ emailId: string }, number | undefined>('sending', async (items) => {
    const attempts = await markSending(db, items.map((i) => i.emailId));
    const owner = firstOfEach(items, (i) => attempts.has(i.emailId));
    return items.map((i, n) => (owner[n] ? attempts.get(i.emailId) : undefined));
    // Not split on failure: run again after a commit whose answer was lost, it would find its
    // emails SENDING and leave them to no one. Failed, each delivery's job is retried, as before.
  }, { split: false });
  const endOfData = statement<{ emailId: string; attempt: number }, boolean>('end_of_data', async (items) => {
    // By attempt, not by email: a run that still holds an attempt another run replaced (it read
    // the email SENDING and sent it again) must not take the current attempt's mark.
    const key = (i: { emailId: string; attempt: number }) => stageKey(i.emailId, i.attempt);
    const marked = await markEndOfData(db, items);
    return firstOfEach(items, (i) => marked.has(key(i)), key);
  });
  const sent = statement<SentMark, boolean>('sent', async (marks) => {
    const first = firstOfEach(marks, () => true);
    const recorded = await markSent(db, marks.filter((_, n) => first[n]));
    return marks.map((m) => recorded.has(m.emailId));
    // Gathered for up to 5 ms: the relay connection is already released, only the job waits, and
    // the statement's fixed cost (the events' statement triggers, the commit) is shared by ~5
    // emails instead of ~3 (docs/performance.md "Delivery"). The end-of-data stage covers the wait.
  }, { waitMs: 5 });
  return {
    load,
    sending: (emailId) => sending({ emailId }),
    endOfData: (emailId, attempt) => endOfData({ emailId, attempt }),
    sent,
  };
}
