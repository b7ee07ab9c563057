import type { Kysely } from 'kysely';
import type { Database, DataValue } from '../../db/schema.js';
import { ApiError, ErrorCode } from '../../http/errors.js';
import { claimIdempotencyKeys, idempotencyKeyReused, type KeyClaim } from '../../http/idempotency.js';
import {
  type DataInput,
  type DataLimitBreach,
  dataLimitError,
  isRefused,
  normalizeEmail,
  resolveData,
  upsertContactsChecked,
  upsertContactsOnce,
  type UpsertedContact,
} from '../contacts/index.js';
import { type AttachedEvent, eventsOfSettledContacts, insertEvents } from './events.insert.js';
import { GroupCommit, GroupCommitClosedError, type GroupCommitOptions, type Outcome, QueueFullError } from '../../lib/group-commit.js';

/** One track call (POST /v1/track, POST /events/track). */
export interface TrackInput {
  projectId: string;
  email: string;
  event: string;
  subscribed?: boolean;
  data?: DataInput;
  /** The request's Idempotency-Key, claimed in the transaction that records the event. */
  idempotency?: KeyClaim;
}

export interface TrackResult {
  contact: string;
  event: string;
  timestamp: string;
}

interface TrackItem {
  projectId: string;
  email: string;
  event: string;
  subscribed: boolean | undefined;
  patch: Record<string, DataValue | null>;
  values: Record<string, DataValue>;
  claim: KeyClaim | undefined;
}

/** The item's Idempotency-Key was taken (by an earlier request, or one committed meanwhile). */
class KeyTaken extends Error {
  constructor(readonly key: string) {
    super('Idempotency-Key already used');
  }
}

/** Batching of track writes; every option of {@link GroupCommitOptions} with its default unless set here. */
export type TrackBatchOptions = Pick<
  GroupCommitOptions<TrackItem, TrackResult>,
  'maxBatchSize' | 'maxWaitMs' | 'maxInFlight' | 'maxInFlightPerGroup' | 'maxQueued' | 'maxRetries' | 'onBatchError' | 'onBatch'
>;

/**
 * Defaults tuned with bench/track.mjs on 2 cores (see bench/track.md): one batch per project
 * in flight (the next fills while it commits), no window when the project is idle (calls of the
 * same event-loop turn share a batch; a timed window left the database idle between batches),
 * up to 4 projects writing at once (each batch holds one pool connection), 10,000 calls
 * waiting at most before 503.
 */
export const TRACK_BATCH_DEFAULTS = {
  maxBatchSize: 256,
  maxWaitMs: 0,
  maxInFlight: 4,
  maxInFlightPerGroup: 1,
  maxQueued: 10_000,
} as const satisfies TrackBatchOptions;

export interface Tracker {
  /** Records the event (upserting the contact); resolves once it committed. */
  track(input: TrackInput): Promise<TrackResult>;
  /** Stops taking calls and writes every waiting one. */
  close(): Promise<void>;
}

/** 503 for a call that was never performed (overload, shutdown): safe to retry with the same key. */
export const isNotPerformed = (err: unknown): boolean => err instanceof ApiError && err.code === ErrorCode.SERVICE_UNAVAILABLE;

/**
 * Group commit of track calls: calls of one project arriving within a few milliseconds
 * share one transaction (claims, one contact upsert, one event insert), which is how
 * ingest passes the one-transaction-per-request ceiling (PERF-NOTES). Per contact and
 * per Idempotency-Key, calls commit in arrival order.
 */
export function createTracker(db: Kysely<Database>, opts: { ttlHours: number; batch?: TrackBatchOptions }): Tracker {
  const batcher = new GroupCommit<TrackItem, TrackResult>({
    ...TRACK_BATCH_DEFAULTS,
    ...opts.batch,
    metricName: 'track',
    groupOf: (item) => item.projectId,
    keysOf: (item) => (item.claim ? [`email:${item.email}`, `key:${item.claim.key}`] : [`email:${item.email}`]),
    run: (projectId, items) => writeBatch(db, opts.ttlHours, projectId, items),
  });

  return {
    async track(input) {
      const { patch, values } = resolveData(input.data);
      const item: TrackItem = {
        projectId: input.projectId,
        email: normalizeEmail(input.email),
        event: input.event,
        subscribed: input.subscribed,
        patch,
        values,
        claim: input.idempotency,
      };
      try {
        return await batcher.submit(item);
      } catch (err) {
        if (err instanceof KeyTaken) throw await idempotencyKeyReused(db, input.projectId, err.key);
        if (err instanceof QueueFullError || err instanceof GroupCommitClosedError) {
          throw new ApiError(503, ErrorCode.SERVICE_UNAVAILABLE, err.message, { headers: { 'Retry-After': '1' } });
        }
        throw err;
      }
    },
    close: () => batcher.close(),
  };
}

/**
 * One batch of one project. Without Idempotency-Keys (most calls): ONE statement upserting the
 * contacts and inserting the events of those it settled (one round trip and one commit per batch,
 * each call's contact and event committed together); the calls whose contact a concurrent write
 * changed meanwhile are then written in a transaction of their own, whose failure is theirs
 * alone (the others are committed: a rerun would record their events twice). With keys: one
 * transaction claiming them with the writes. Returns an outcome per item: a call whose contact
 * would break a data limit gets 422 without failing the batch (its contact is left as it was, it
 * records no event, and its Idempotency-Key is released: a 4xx leaves the key free).
 */
async function writeBatch(db: Kysely<Database>, ttlHours: number, projectId: string, items: readonly TrackItem[]): Promise<Outcome<TrackResult>[]> {
  if (items.some((i) => i.claim)) return writeInTransaction(db, ttlHours, projectId, items);
  const first = await upsertContactsOnce(
    db,
    projectId,
    items.map(toUpsert),
    eventsOfSettledContacts(
      projectId,
      items.map((i) => ({ email: i.email, name: i.event, data: i.values })),
    ),
  );
  const rest = items.filter((i) => !first.has(i.email));
  const later = new Map<TrackItem, Outcome<TrackResult>>();
  if (rest.length > 0) {
    try {
      const outcomes = await writeInTransaction(db, ttlHours, projectId, rest);
      rest.forEach((item, n) => later.set(item, at(outcomes, n)));
    } catch (error) {
      for (const item of rest) later.set(item, { ok: false, error });
    }
  }
  return items.map((item): Outcome<TrackResult> => {
    const outcome = first.get(item.email);
    if (!outcome) return later.get(item) ?? { ok: false, error: new Error('track batch: call not written') };
    if (isRefused(outcome)) return { ok: false, error: dataLimitError(outcome.refused) };
    const event = outcome.attached as AttachedEvent | null | undefined;
    if (!event) return { ok: false, error: new Error('track batch: no event recorded for a settled contact') };
    return { ok: true, value: { contact: outcome.row.id, event: event.id, timestamp: new Date(Number(event.at)).toISOString() } };
  });
}

const toUpsert = (i: TrackItem) => ({ email: i.email, patch: i.patch, subscribed: i.subscribed, subscribedIfNew: true });

/** Calls written in one transaction: their Idempotency-Keys claimed (when they have some), contacts upserted (locking them on a second round), events inserted. */
async function writeInTransaction(db: Kysely<Database>, ttlHours: number, projectId: string, items: readonly TrackItem[]): Promise<Outcome<TrackResult>[]> {
  return db.transaction().execute(async (trx) => {
    const claims = items.flatMap((i) => (i.claim ? [i.claim] : []));
    const claimed = await claimIdempotencyKeys(trx, projectId, claims, ttlHours);
    const claimedItems = items.filter((i) => !i.claim || claimed.has(i.claim.key));
    const upserts = await upsertContactsChecked(trx, projectId, claimedItems.map(toUpsert));
    const refused = new Map<TrackItem, DataLimitBreach>();
    const accepted: { item: TrackItem; contact: UpsertedContact }[] = [];
    claimedItems.forEach((item, n) => {
      const outcome = at(upserts, n);
      if (isRefused(outcome)) refused.set(item, outcome.refused);
      else accepted.push({ item, contact: outcome });
    });
    const released = [...refused.keys()].flatMap((i) => (i.claim ? [i.claim.key] : []));
    if (released.length > 0) await trx.deleteFrom('idempotency_keys').where('project_id', '=', projectId).where('key', 'in', released).execute();
    const events = await insertEvents(
      trx,
      projectId,
      accepted.map(({ item, contact }) => ({ contactId: contact.row.id, name: item.event, data: item.values })),
    );
    const results = new Map<TrackItem, TrackResult>();
    accepted.forEach(({ item, contact }, n) => {
      const event = at(events, n);
      results.set(item, { contact: contact.row.id, event: event.id, timestamp: event.createdAt.toISOString() });
    });
    return items.map((item): Outcome<TrackResult> => {
      const value = results.get(item);
      if (value) return { ok: true, value };
      const breach = refused.get(item);
      return { ok: false, error: breach ? dataLimitError(breach) : new KeyTaken(item.claim?.key ?? '') };
    });
  });
}

function at<V>(list: readonly V[], index: number): V {
  const value = list[index];
  if (value === undefined) throw new Error(`track batch: no result at ${index}`);
  return value;
}
