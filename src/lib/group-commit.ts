/**
 * Group commit: many small writes that arrive close together share one transaction.
 * Callers `submit` one item and get a promise that settles only after the batch holding
 * the item committed (or failed); nothing is acknowledged before it is durable.
 */

import { groupCommitObserver } from './metrics.js';

/** The result of one item of a batch: its value, or the error its caller gets. */
export type Outcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface GroupCommitOptions<T, R> {
  /**
   * Performs one batch (items of one group, in submit order) in one transaction and
   * returns one outcome per item, in the same order. Throwing fails the whole batch
   * (its transaction must have rolled back): it is retried, or split (see below).
   */
  run: (group: string, items: readonly T[]) => Promise<Outcome<R>[]>;
  /** The group of an item (e.g. its project): a batch never mixes groups. */
  groupOf: (item: T) => string;
  /**
   * Keys an item must not share with another item of its batch, nor with a batch of its
   * group in flight (e.g. its contact's email). An item whose key is taken waits for a
   * later batch, and so does every later item sharing a key with it: per key, items
   * commit in submit order. Default: no keys.
   */
  keysOf?: (item: T) => readonly string[];
  /** Whether a failed batch is worth running again as is. Default: PostgreSQL deadlock (40P01) and serialization failure (40001). */
  isRetryable?: (err: unknown) => boolean;
  /** Retries of a batch that failed with a retryable error. Default 3. */
  maxRetries?: number;
  /** Items per batch at most. Default 256. */
  maxBatchSize?: number;
  /**
   * How long the first item of a batch waits for companions when nothing forces a batch
   * out earlier (a full batch does). 0 = until the current turn of the event loop ends.
   * Items that arrive while their group's batches are in flight wait for those anyway, and
   * go as soon as one ends. Default 2 ms.
   */
  maxWaitMs?: number;
  /** Batches in flight at once, all groups together (each holds a pool connection). Default 4. */
  maxInFlight?: number;
  /**
   * Batches of one group in flight at once (their keys are disjoint). Default 1: while a
   * group's batch commits, its next batch fills up (measured best on 2 cores, see
   * bench/track.md); more lets a group's batches overlap, at the cost of more transactions.
   */
  maxInFlightPerGroup?: number;
  /** Items waiting (not yet in a batch) at most; `submit` beyond it fails with {@link QueueFullError}. Default 10,000. */
  maxQueued?: number;
  /**
   * Whether a batch of several items that failed for good is split and each item run alone (so
   * one bad item cannot fail the others). Default true. False: every item gets the batch's
   * error, for a `run` that must not run twice when its failure is ambiguous (a lost connection
   * may come after the commit) and that no single item can make fail.
   */
  splitFailedBatches?: boolean;
  /** Told when a batch of several items failed for good and is split into single items. */
  onBatchError?: (err: unknown, info: { group: string; size: number }) => void;
  /** Told after each batch that committed (for metrics or debug logs). */
  onBatch?: (info: { group: string; size: number; ms: number }) => void;
  /**
   * Names the batcher in the `mailplatform_group_commit_batch_size` histogram (lib/metrics.ts),
   * which then gets each committed batch's size. Default: not measured.
   */
  metricName?: string;
}

/** `submit` when {@link GroupCommitOptions.maxQueued} items are already waiting: shed load, retry later. */
export class QueueFullError extends Error {
  constructor() {
    super('Too many writes waiting; retry shortly');
    this.name = 'QueueFullError';
  }
}

/** `submit` after `close()` began. */
export class GroupCommitClosedError extends Error {
  constructor() {
    super('Shutting down; retry shortly');
    this.name = 'GroupCommitClosedError';
  }
}

const RETRYABLE_PG_CODES = new Set(['40P01', '40001']);
const isRetryablePgError = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' && RETRYABLE_PG_CODES.has(err.code);

interface Pending<T, R> {
  item: T;
  keys: readonly string[];
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

interface Group<T, R> {
  name: string;
  queue: Pending<T, R>[];
  /** Keys of this group's batches in flight. */
  busy: Set<string>;
  inFlight: number;
  /** The wait window of the oldest queued item has passed (or a batch is full). */
  ready: boolean;
  /** Cancels the pending wait-window timer, when one is armed. */
  timer: (() => void) | undefined;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class GroupCommit<T, R> {
  private readonly opts: Required<Omit<GroupCommitOptions<T, R>, 'onBatchError' | 'onBatch' | 'metricName'>> &
    Pick<GroupCommitOptions<T, R>, 'onBatchError' | 'onBatch'>;
  private readonly observeSize: ((size: number) => void) | undefined;
  private readonly groups = new Map<string, Group<T, R>>();
  private queued = 0;
  private inFlight = 0;
  private closing = false;
  private idle: (() => void)[] = [];

  constructor(options: GroupCommitOptions<T, R>) {
    this.opts = {
      keysOf: () => [],
      isRetryable: isRetryablePgError,
      maxRetries: 3,
      maxBatchSize: 256,
      maxWaitMs: 2,
      maxInFlight: 4,
      maxInFlightPerGroup: 1,
      maxQueued: 10_000,
      splitFailedBatches: true,
      ...options,
    };
    this.observeSize = options.metricName === undefined ? undefined : groupCommitObserver(options.metricName);
  }

  /** Items waiting for a batch, and batches in flight (for metrics and tests). */
  get stats(): { queued: number; inFlight: number } {
    return { queued: this.queued, inFlight: this.inFlight };
  }

  /** Resolves with the item's value once its batch committed; rejects with its error. */
  submit(item: T): Promise<R> {
    if (this.closing) return Promise.reject(new GroupCommitClosedError());
    if (this.queued >= this.opts.maxQueued) return Promise.reject(new QueueFullError());
    const name = this.opts.groupOf(item);
    let group = this.groups.get(name);
    if (!group) {
      group = { name, queue: [], busy: new Set(), inFlight: 0, ready: false, timer: undefined };
      this.groups.set(name, group);
    }
    const g = group;
    return new Promise<R>((resolve, reject) => {
      g.queue.push({ item, keys: this.opts.keysOf(item), resolve, reject });
      this.queued++;
      if (g.queue.length >= this.opts.maxBatchSize) g.ready = true;
      if (g.ready) this.flush(g);
      else this.arm(g);
    });
  }

  /** Stops taking items, writes every waiting one, and resolves when nothing is left. */
  async close(): Promise<void> {
    this.closing = true;
    for (const g of this.groups.values()) this.markReady(g);
    this.pump();
    if (this.queued === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  private arm(g: Group<T, R>): void {
    if (g.timer) return;
    const fire = () => {
      g.timer = undefined;
      g.ready = true;
      this.flush(g);
    };
    if (this.opts.maxWaitMs > 0) {
      const t = setTimeout(fire, this.opts.maxWaitMs);
      g.timer = () => clearTimeout(t);
    } else {
      const t = setImmediate(fire);
      g.timer = () => clearImmediate(t);
    }
  }

  private markReady(g: Group<T, R>): void {
    g.timer?.();
    g.timer = undefined;
    g.ready = g.queue.length > 0;
  }

  /** Starts batches of a ready group while slots are free and items can go. */
  private flush(g: Group<T, R>): void {
    while (g.ready && this.inFlight < this.opts.maxInFlight && g.inFlight < this.opts.maxInFlightPerGroup) {
      const batch = this.take(g);
      if (batch.length === 0) break; // every waiting item shares a key with a batch in flight
      void this.execute(g, batch);
    }
  }

  /** Flushes ready groups, oldest first, after a slot was freed. */
  private pump(): void {
    for (const g of [...this.groups.values()]) {
      if (this.inFlight >= this.opts.maxInFlight) return;
      this.flush(g);
      if (g.queue.length === 0 && g.inFlight === 0 && !g.timer) this.groups.delete(g.name);
    }
  }

  /** Takes the next batch from a group's queue, keeping per-key order. */
  private take(g: Group<T, R>): Pending<T, R>[] {
    const batch: Pending<T, R>[] = [];
    const rest: Pending<T, R>[] = [];
    const used = new Set<string>();
    const blocked = new Set<string>();
    for (const p of g.queue) {
      const free = batch.length < this.opts.maxBatchSize && p.keys.every((k) => !g.busy.has(k) && !used.has(k) && !blocked.has(k));
      if (free) {
        batch.push(p);
        for (const k of p.keys) used.add(k);
      } else {
        rest.push(p);
        for (const k of p.keys) blocked.add(k);
      }
    }
    g.queue = rest;
    this.queued -= batch.length;
    for (const k of used) g.busy.add(k);
    if (rest.length === 0) g.ready = false;
    return batch;
  }

  private async execute(g: Group<T, R>, batch: Pending<T, R>[]): Promise<void> {
    this.inFlight++;
    g.inFlight++;
    try {
      await this.runBatch(g.name, batch);
    } finally {
      for (const p of batch) for (const k of p.keys) g.busy.delete(k);
      this.inFlight--;
      g.inFlight--;
      // Items that waited while this batch ran have waited long enough: the next batch goes now.
      if (g.queue.length > 0) this.markReady(g);
      // Group order rotates so one busy group cannot starve the others.
      this.groups.delete(g.name);
      this.groups.set(g.name, g);
      this.pump();
      if (this.queued === 0 && this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private async runBatch(group: string, batch: Pending<T, R>[]): Promise<void> {
    const started = performance.now();
    const first = await this.attempt(group, batch);
    if (first.ok) {
      settle(batch, first.outcomes);
      this.observeSize?.(batch.length);
      quietly(() => this.opts.onBatch?.({ group, size: batch.length, ms: performance.now() - started }));
      return;
    }
    if (batch.length === 1 || first.committed || !this.opts.splitFailedBatches) {
      for (const p of batch) p.reject(first.error);
      return;
    }
    quietly(() => this.opts.onBatchError?.(first.error, { group, size: batch.length }));
    // One bad item must not fail the others: each goes alone, in order.
    for (const p of batch) {
      const single = await this.attempt(group, [p]);
      if (single.ok) settle([p], single.outcomes);
      else p.reject(single.error);
    }
  }

  /**
   * Runs a batch, retrying retryable failures. `committed` marks a failure after `run`
   * returned (a wrong number of outcomes): its writes may be durable, so it is never rerun.
   */
  private async attempt(
    group: string,
    batch: Pending<T, R>[],
  ): Promise<{ ok: true; outcomes: Outcome<R>[] } | { ok: false; error: unknown; committed: boolean }> {
    const items = batch.map((p) => p.item);
    for (let attempt = 0; ; attempt++) {
      let outcomes: Outcome<R>[];
      try {
        outcomes = await this.opts.run(group, items);
      } catch (error) {
        if (attempt < this.opts.maxRetries && this.opts.isRetryable(error)) {
          await sleep(1 + Math.random() * 5 * (attempt + 1));
          continue;
        }
        return { ok: false, error, committed: false };
      }
      if (outcomes.length === items.length) return { ok: true, outcomes };
      return { ok: false, error: new Error(`group commit: ${outcomes.length} outcomes for ${items.length} items`), committed: true };
    }
  }
}

/** Runs an observer callback; its failure must never fail or rerun a batch. */
function quietly(fn: () => void): void {
  try {
    fn();
  } catch {
    // an observer's bug is not the batch's
  }
}

function settle<T, R>(batch: Pending<T, R>[], outcomes: Outcome<R>[]): void {
  batch.forEach((p, i) => {
    const o = outcomes[i];
    if (o?.ok) p.resolve(o.value);
    else p.reject(o ? o.error : new Error('group commit: missing outcome'));
  });
}

