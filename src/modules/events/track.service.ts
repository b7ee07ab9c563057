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
  type UpsertedContact,
} from '../contacts/index.js';
import { insertEvents } from './events.insert.js';
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
 * in flight (the next fills while it commits), a 2 ms window when the project is idle, up to
 * 4 projects writing at once (each batch holds one pool connection), 10,000 calls waiting at
 * most before 503.
 */
export const TRACK_BATCH_DEFAULTS = {
  maxBatchSize: 256,
  maxWaitMs: 2,
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
 * One batch of one project in one transaction. Throws (rolled back) or returns an outcome per
 * item. A call whose contact would break a data limit gets 422 without failing the batch: its
 * contact is left as it was, it records no event, and its Idempotency-Key is released (a 4xx
 * leaves the key free).
 */
async function writeBatch(db: Kysely<Database>, ttlHours: number, projectId: string, items: readonly TrackItem[]): Promise<Outcome<TrackResult>[]> {
  return db.transaction().execute(async (trx) => {
    const claims = items.flatMap((i) => (i.claim ? [i.claim] : []));
    const claimed = await claimIdempotencyKeys(trx, projectId, claims, ttlHours);
    const claimedItems = items.filter((i) => !i.claim || claimed.has(i.claim.key));
    const upserts = await upsertContactsChecked(
      trx,
      projectId,
      claimedItems.map((i) => ({ email: i.email, patch: i.patch, subscribed: i.subscribed, subscribedIfNew: true })),
    );
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
