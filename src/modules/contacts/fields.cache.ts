import type { FieldsList } from './fields.schema.js';

/**
 * GET /contacts/fields answers of large projects, per project for `ttlMs`. The pending answer is
 * kept, so concurrent requests share one computation; a failed one is dropped at once.
 */
export interface FieldsCache {
  get(projectId: string): Promise<FieldsList> | undefined;
  set(projectId: string, answer: Promise<FieldsList>): void;
  /** The project's contacts in its last answer, expired or not (sizes the next sample). */
  lastTotal(projectId: string): number | undefined;
  /** Drops the project's answer (a field was deleted): the next request recomputes it. */
  invalidate(projectId: string): void;
}

/** At most `maxProjects` answers are kept (~300 KB each at most); the oldest goes first. */
export function createFieldsCache(ttlMs: number, maxProjects = 200): FieldsCache {
  const entries = new Map<string, { answer: Promise<FieldsList>; until: number }>();
  const totals = new Map<string, number>();
  return {
    get(projectId) {
      const entry = entries.get(projectId);
      if (entry && entry.until > Date.now()) return entry.answer;
      return undefined;
    },
    set(projectId, answer) {
      entries.delete(projectId);
      if (entries.size >= maxProjects) entries.delete(entries.keys().next().value ?? '');
      const entry = { answer, until: Date.now() + ttlMs };
      if (ttlMs > 0) entries.set(projectId, entry);
      answer.then(
        (list) => {
          totals.delete(projectId);
          if (totals.size >= maxProjects) totals.delete(totals.keys().next().value ?? '');
          totals.set(projectId, list.totalContacts);
        },
        () => {
          if (entries.get(projectId) === entry) entries.delete(projectId);
        },
      );
    },
    lastTotal(projectId) {
      return totals.get(projectId);
    },
    invalidate(projectId) {
      entries.delete(projectId);
    },
  };
}
