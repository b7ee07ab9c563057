import { listen } from '../db/listen.js';
import type { ProjectContext } from './context.js';

/** The channel of migration 0038's trigger: a project id whose key lookups changed. */
export const PROJECT_AUTH_CHANNEL = 'project_auth';

/** Options of {@link createKeyCache}. */
export interface KeyCacheOptions {
  /** An entry is looked up again after this long whatever happened. Default 60 s. */
  ttlMs?: number;
  /** Entries kept at most (all dropped when full: invalid keys are never cached). Default 10,000. */
  maxEntries?: number;
}

/**
 * API key → project lookups, cached in the process: /v1/track made one database query per request
 * for it, about a quarter of the API's work at full rate (docs/performance.md). An entry is dropped
 * when PostgreSQL's `project_auth` notification names its project (keys rotated, project disabled,
 * re-enabled or deleted, tracking switched: migration 0038), which arrives at commit in every
 * process, and after `ttlMs` in any case. While the notification connection is down the cache is
 * not used at all (every request looks its key up), so a missed notification never leaves a
 * rotated key working. Unknown keys are never cached.
 */
export interface KeyCache {
  /** The project of `key`: cached, or `load`ed (and cached when found). */
  lookup(key: string, load: () => Promise<ProjectContext | undefined>): Promise<ProjectContext | undefined>;
  /** Drops the entries of one project (a notification, or a change made by this process). */
  invalidate(projectId: string): void;
  /** Notifications are flowing: start caching (from empty). */
  up(): void;
  /** Notifications may be missed: drop everything and stop caching until `up`. */
  down(): void;
  /** Entries held (for tests). */
  readonly size: number;
}

interface Entry {
  project: ProjectContext;
  expires: number;
}

export function createKeyCache(opts: KeyCacheOptions = {}): KeyCache {
  const ttlMs = opts.ttlMs ?? 60_000;
  const maxEntries = opts.maxEntries ?? 10_000;
  const entries = new Map<string, Entry>();
  const keysOf = new Map<string, Set<string>>();
  let live = false;
  // Bumped by every invalidation: a lookup that started before one must not store what it read.
  let generation = 0;

  const clear = () => {
    generation++;
    entries.clear();
    keysOf.clear();
  };

  return {
    async lookup(key, load) {
      if (!live) return load();
      const hit = entries.get(key);
      if (hit && hit.expires > Date.now()) return hit.project;
      const started = generation;
      const project = await load();
      if (!project || !live || started !== generation) return project;
      if (entries.size >= maxEntries) clear();
      const frozen = Object.freeze({ ...project });
      entries.set(key, { project: frozen, expires: Date.now() + ttlMs });
      let keys = keysOf.get(project.id);
      if (!keys) keysOf.set(project.id, (keys = new Set()));
      keys.add(key);
      return frozen;
    },
    invalidate(projectId) {
      generation++;
      const keys = keysOf.get(projectId);
      if (!keys) return;
      keysOf.delete(projectId);
      for (const key of keys) entries.delete(key);
    },
    up() {
      clear();
      live = true;
    },
    down() {
      live = false;
      clear();
    },
    get size() {
      return entries.size;
    },
  };
}

/**
 * A key cache kept current by the `project_auth` notifications of the database at `url`
 * (src/db/listen.ts); `close` ends its connection.
 */
export function startKeyCache(url: string, log: { warn: (obj: object, msg: string) => void; info: (msg: string) => void }, opts: KeyCacheOptions = {}) {
  const cache = createKeyCache(opts);
  let wasUp = false;
  const listening = listen(url, PROJECT_AUTH_CHANNEL, {
    onNotify: (projectId) => cache.invalidate(projectId),
    onUp: () => {
      cache.up();
      if (wasUp) log.info('API key cache: notifications restored, caching again');
      wasUp = true;
    },
    onDown: (err) => {
      cache.down();
      if (wasUp) log.warn({ err }, 'API key cache: notification connection lost; looking every key up until it is back');
      wasUp = false;
    },
  });
  return { cache, close: () => listening.close() };
}
