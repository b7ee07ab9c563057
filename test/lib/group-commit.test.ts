import { describe, expect, it } from 'vitest';
import {
  GroupCommit,
  GroupCommitClosedError,
  type GroupCommitOptions,
  type Outcome,
  QueueFullError,
} from '../../src/lib/group-commit.js';

interface Item {
  group: string;
  id: number;
  keys?: string[];
  /** The fake writer fails any batch holding this item. */
  poison?: boolean;
  /** The fake writer answers this item with an error outcome. */
  refuse?: boolean;
}

/** A fake writer recording every batch it was given. */
function recorder(opts: { delayMs?: number; fail?: (items: readonly Item[], attempt: number) => unknown } = {}) {
  const batches: { group: string; ids: number[] }[] = [];
  let active = 0;
  let maxActive = 0;
  const activeByGroup = new Map<string, number>();
  let maxActivePerGroup = 0;
  let calls = 0;
  const run = async (group: string, items: readonly Item[]): Promise<Outcome<string>[]> => {
    const attempt = calls++;
    active++;
    activeByGroup.set(group, (activeByGroup.get(group) ?? 0) + 1);
    maxActive = Math.max(maxActive, active);
    maxActivePerGroup = Math.max(maxActivePerGroup, activeByGroup.get(group) ?? 0);
    try {
      await new Promise((r) => setTimeout(r, opts.delayMs ?? 1));
      const failure = opts.fail?.(items, attempt);
      if (failure) throw failure;
      if (items.some((i) => i.poison)) throw new Error('poisoned batch');
      batches.push({ group, ids: items.map((i) => i.id) });
      return items.map((i) => (i.refuse ? { ok: false, error: new Error(`refused ${i.id}`) } : { ok: true, value: `${group}:${i.id}` }));
    } finally {
      active--;
      activeByGroup.set(group, (activeByGroup.get(group) ?? 1) - 1);
    }
  };
  return { run, batches, stats: () => ({ maxActive, maxActivePerGroup }) };
}

function batcher(run: GroupCommitOptions<Item, string>['run'], opts: Partial<GroupCommitOptions<Item, string>> = {}) {
  return new GroupCommit<Item, string>({ run, groupOf: (i) => i.group, keysOf: (i) => i.keys ?? [], ...opts });
}

describe('GroupCommit', () => {
  it('writes items submitted together in one batch and resolves each with its own value', async () => {
    const w = recorder();
    const b = batcher(w.run);
    const values = await Promise.all([1, 2, 3, 4].map((id) => b.submit({ group: 'p', id })));
    expect(values).toEqual(['p:1', 'p:2', 'p:3', 'p:4']);
    expect(w.batches).toEqual([{ group: 'p', ids: [1, 2, 3, 4] }]);
  });

  it('never mixes groups and caps the batch size', async () => {
    const w = recorder();
    const b = batcher(w.run, { maxBatchSize: 3 });
    await Promise.all([1, 2, 3, 4, 5, 6, 7].map((id) => b.submit({ group: id % 2 ? 'odd' : 'even', id })));
    for (const batch of w.batches) {
      expect(batch.ids.length).toBeLessThanOrEqual(3);
      expect(batch.ids.every((id) => (id % 2 ? 'odd' : 'even') === batch.group)).toBe(true);
    }
    expect(w.batches.flatMap((x) => x.ids).sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('puts items sharing a key in later batches, in submit order, and holds back later items sharing any key with a waiting one', async () => {
    const w = recorder({ delayMs: 5 });
    const b = batcher(w.run);
    await Promise.all([
      b.submit({ group: 'p', id: 1, keys: ['a'] }),
      b.submit({ group: 'p', id: 2, keys: ['a', 'x'] }), // waits for 1
      b.submit({ group: 'p', id: 3, keys: ['x'] }), // shares x with 2, which waits: must not overtake it
      b.submit({ group: 'p', id: 4, keys: ['b'] }),
    ]);
    const batchOf = (id: number) => w.batches.findIndex((x) => x.ids.includes(id));
    expect(batchOf(1)).toBe(0);
    expect(batchOf(4)).toBe(0);
    expect(batchOf(2)).toBeGreaterThan(batchOf(1));
    expect(batchOf(3)).toBeGreaterThan(batchOf(2));
  });

  it('keeps at most maxInFlightPerGroup batches of a group and maxInFlight overall in flight', async () => {
    const w = recorder({ delayMs: 5 });
    const b = batcher(w.run, { maxBatchSize: 2, maxInFlight: 3, maxInFlightPerGroup: 2 });
    await Promise.all(Array.from({ length: 40 }, (_, id) => b.submit({ group: `g${id % 4}`, id })));
    expect(w.stats().maxActive).toBe(3);
    expect(w.stats().maxActivePerGroup).toBe(2);
  });

  it('retries a batch that failed with a deadlock, then resolves it', async () => {
    const w = recorder({ fail: (_items, attempt) => (attempt < 2 ? Object.assign(new Error('deadlock detected'), { code: '40P01' }) : undefined) });
    const b = batcher(w.run);
    expect(await Promise.all([b.submit({ group: 'p', id: 1 }), b.submit({ group: 'p', id: 2 })])).toEqual(['p:1', 'p:2']);
    expect(w.batches).toEqual([{ group: 'p', ids: [1, 2] }]);
  });

  it('splits a batch that failed otherwise into single items, so one bad item fails alone', async () => {
    const w = recorder();
    const errors: unknown[] = [];
    const b = batcher(w.run, { onBatchError: (err) => errors.push(err) });
    const results = await Promise.allSettled([1, 2, 3].map((id) => b.submit({ group: 'p', id, poison: id === 2 })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(w.batches).toEqual([{ group: 'p', ids: [1] }, { group: 'p', ids: [3] }]);
    expect(errors).toHaveLength(1);
  });

  it('rejects only the items whose outcome is an error', async () => {
    const w = recorder();
    const b = batcher(w.run);
    const results = await Promise.allSettled([1, 2].map((id) => b.submit({ group: 'p', id, refuse: id === 1 })));
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled']);
    expect(w.batches).toEqual([{ group: 'p', ids: [1, 2] }]);
  });

  it('refuses items beyond maxQueued with QueueFullError', async () => {
    const w = recorder();
    const b = batcher(w.run, { maxQueued: 2, maxWaitMs: 20 });
    const results = await Promise.allSettled([1, 2, 3].map((id) => b.submit({ group: 'p', id })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect(results[2]?.status === 'rejected' && results[2].reason).toBeInstanceOf(QueueFullError);
    expect(b.stats).toEqual({ queued: 0, inFlight: 0 });
  });

  it('drains waiting items on close without waiting out the window, then refuses new ones', async () => {
    const w = recorder();
    const b = batcher(w.run, { maxWaitMs: 60_000 });
    const pending = [1, 2, 3].map((id) => b.submit({ group: 'p', id }));
    const started = Date.now();
    await b.close();
    // The window is 60 s: anything well below it proves close() did not wait it out.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await Promise.all(pending)).toEqual(['p:1', 'p:2', 'p:3']);
    await expect(b.submit({ group: 'p', id: 4 })).rejects.toBeInstanceOf(GroupCommitClosedError);
  });

  it('waits for the next turn of the event loop when maxWaitMs is 0', async () => {
    const w = recorder();
    const b = batcher(w.run, { maxWaitMs: 0 });
    await Promise.all([1, 2, 3].map((id) => b.submit({ group: 'p', id })));
    expect(w.batches).toEqual([{ group: 'p', ids: [1, 2, 3] }]);
  });
});
