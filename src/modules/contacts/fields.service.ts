import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { Database } from '../../db/schema.js';
import { validationError } from '../../http/errors.js';
import { JobPriority, Tasks } from '../../jobs/queue.js';
import { campaignsUsing } from '../campaigns/index.js';
import { segmentsReferencingField } from '../segments/index.js';
import { workflowsUsingField } from '../workflows/index.js';
import { RESERVED_DATA_KEYS } from './data-rules.js';
import {
  countContactsWithKey,
  countContactsUpTo,
  countDataKeys,
  type DataKeyStats,
  findTemplatesUsingVariable,
  type KeyTypeCount,
  listKeyValues,
  removeKeyBatch,
  removeKeyFromContacts,
  sampleDataKeys,
} from './fields.repo.js';
import type { FieldsCache } from './fields.cache.js';
import {
  type Field,
  type FieldsList,
  type FieldType,
  type FieldUsage,
  MAX_LISTED_FIELDS,
  MAX_VALUES_PAGE_SIZE,
  type ValuesPage,
} from './fields.schema.js';
import { addJobProgress, claimJob, createQueuedJob, JobKind, lockUnfinishedJob } from './jobs.repo.js';

/** Fields every contact has; not data keys. */
const STANDARD_FIELDS: readonly { field: string; type: FieldType }[] = [
  { field: 'email', type: 'string' },
  { field: 'subscribed', type: 'boolean' },
  { field: 'createdAt', type: 'date' },
  { field: 'updatedAt', type: 'date' },
];
const STANDARD_NAMES: ReadonlySet<string> = new Set(STANDARD_FIELDS.map((f) => f.field));

/** Above this many contacts having the key, DELETE /contacts/fields/:field runs as a job. */
export const DEFAULT_FIELD_DELETE_JOB_THRESHOLD = 10_000;
/** Contacts scanned per batch (one transaction) of a field-delete job. */
const FIELD_DELETE_SCAN = 2_000;

/** A field name of the API: `plan` and `data.plan` name the same data key. */
export interface FieldName {
  /** `data.<key>`, or the standard field's name. */
  field: string;
  key: string;
  standard: boolean;
}

export function parseFieldName(name: string): FieldName {
  if (STANDARD_NAMES.has(name)) return { field: name, key: name, standard: true };
  const key = name.startsWith('data.') && name.length > 5 ? name.slice(5) : name;
  return { field: `data.${key}`, key, standard: false };
}

const fieldError = (message: string, code = 'invalid_string') => validationError([{ field: 'field', message, code }]);

const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part * 10_000) / whole) / 100);

/** The key's type: its most frequent JSON type; strings that are mostly ISO 8601 dates are dates. */
function inferType(counts: readonly KeyTypeCount[]): FieldType {
  let best: KeyTypeCount | undefined;
  for (const c of counts) if (!best || c.count > best.count) best = c;
  if (!best) return 'string';
  if (best.type === 'number' || best.type === 'boolean') return best.type;
  return best.type === 'string' && best.dates * 2 > best.count ? 'date' : 'string';
}

/** Options of {@link listFields}. */
export interface ListFieldsOptions {
  /** Data keys listed at most. Default {@link MAX_LISTED_FIELDS}. */
  limit?: number;
  /** Up to this many contacts, the answer is exact (every contact read). Default 50,000. */
  exactUpTo?: number;
  /** Above `exactUpTo`: contacts sampled (uniform, random). Default 20,000. */
  sample?: number;
  /** Keeps sampled answers (large projects only) for its time to live. Default: none. */
  cache?: FieldsCache;
}

export const DEFAULT_FIELDS_EXACT_UP_TO = 50_000;
export const DEFAULT_FIELDS_SAMPLE = 20_000;

/**
 * GET /contacts/fields: standard fields, then data keys by coverage (then name): the `limit` keys
 * most contacts have, so the answer stays small whatever the project holds. Exact up to
 * `exactUpTo` contacts; above, counts, coverage and types are estimated from a uniform sample of
 * `sample` contacts (totalContacts stays exact; docs/contacts.md "GET /contacts/fields").
 */
export async function listFields(db: Kysely<Database>, projectId: string, opts: ListFieldsOptions = {}): Promise<FieldsList> {
  const cached = opts.cache?.get(projectId);
  if (cached) return cached;
  const limit = opts.limit ?? MAX_LISTED_FIELDS;
  const exactUpTo = opts.exactUpTo ?? DEFAULT_FIELDS_EXACT_UP_TO;
  if ((await countContactsUpTo(db, projectId, exactUpTo)) <= exactUpTo) return toFieldsList(await countDataKeys(db, projectId, limit));
  const answer = sampleFields(db, projectId, {
    sample: opts.sample ?? DEFAULT_FIELDS_SAMPLE,
    limit,
    expected: opts.cache?.lastTotal(projectId),
    atLeast: exactUpTo + 1,
  });
  opts.cache?.set(projectId, answer);
  return answer;
}

/** A sample short of half its size (the project's size was overestimated) is drawn again at the right rate. */
async function sampleFields(
  db: Kysely<Database>,
  projectId: string,
  input: { sample: number; limit: number; expected?: number; atLeast: number },
): Promise<FieldsList> {
  let stats = await sampleDataKeys(db, projectId, input);
  if (stats.scanned * 2 < input.sample && stats.scanned < stats.totalContacts) {
    stats = await sampleDataKeys(db, projectId, { ...input, expected: stats.totalContacts });
  }
  return toFieldsList(stats);
}

/** The answer from key statistics; counts of a sample are scaled to the project (rounded). */
function toFieldsList({ totalContacts, scanned, totalKeys, keys }: DataKeyStats): FieldsList {
  const scale = scanned === 0 ? 0 : totalContacts / scanned;
  const byKey = new Map<string, KeyTypeCount[]>();
  for (const k of keys) byKey.set(k.key, [...(byKey.get(k.key) ?? []), k]);
  const custom: Field[] = [...byKey].map(([key, counts]) => {
    const count = Math.min(totalContacts, Math.round(counts.reduce((n, c) => n + c.count, 0) * scale));
    return { field: `data.${key}`, key, type: inferType(counts), count, coverage: percent(count, totalContacts), standard: false };
  });
  custom.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const standard: Field[] = STANDARD_FIELDS.map((f) => ({
    field: f.field,
    key: f.field,
    type: f.type,
    count: totalContacts,
    coverage: totalContacts === 0 ? 0 : 100,
    standard: true,
  }));
  return { data: [...standard, ...custom], totalContacts, totalKeys, truncated: totalKeys > custom.length };
}

/** GET /contacts/fields/:field/values; an unknown key is an empty page. */
export async function listFieldValues(
  db: Kysely<Database>,
  input: { projectId: string; field: string; page: number; pageSize: number },
): Promise<ValuesPage> {
  const name = parseFieldName(input.field);
  if (name.standard) throw fieldError(`${name.field} is a standard field: values are listed for data fields only`);
  const pageSize = Math.min(input.pageSize, MAX_VALUES_PAGE_SIZE);
  const { total, values } = await listKeyValues(db, {
    projectId: input.projectId,
    key: name.key,
    limit: pageSize,
    offset: (input.page - 1) * pageSize,
  });
  return { data: values, page: input.page, pageSize, total, totalPages: Math.ceil(total / pageSize) };
}

/**
 * GET /contacts/fields/:field/usage: templates whose subject or body use `{{key}}`,
 * `{{key ?? …}}` or `{{{key}}}`; segments whose condition filters on the field; campaigns that do
 * either (audience condition, subject, body); workflows whose CONDITION steps filter on it or
 * whose UPDATE_CONTACT steps write it.
 */
export async function fieldUsage(db: Kysely<Database>, projectId: string, field: string): Promise<FieldUsage> {
  const name = parseFieldName(field);
  const [templates, segments, campaigns, workflows] = await Promise.all([
    findTemplatesUsingVariable(db, projectId, name.key),
    segmentsReferencingField(db, projectId, name.field),
    campaignsUsing(db, projectId, { field: name.field, variable: name.key }),
    workflowsUsingField(db, projectId, name.field),
  ]);
  return { field: name.field, segments, campaigns, templates, workflows };
}

/**
 * DELETE /contacts/fields/:field: removes the key from every contact of the project. Up to
 * `jobThreshold` contacts having it: one statement now (returns undefined); more: a queued job
 * working in batches (returns its id).
 */
export async function deleteField(
  db: Kysely<Database>,
  input: { projectId: string; field: string; jobThreshold?: number },
): Promise<{ jobId: string } | undefined> {
  const name = parseFieldName(input.field);
  if (name.standard) throw fieldError(`${name.field} is a standard field and cannot be deleted`);
  if (RESERVED_DATA_KEYS.has(name.key)) throw fieldError(`${name.key} is a reserved key and is never stored in contact data`);
  const threshold = input.jobThreshold ?? DEFAULT_FIELD_DELETE_JOB_THRESHOLD;
  return db.transaction().execute(async (trx) => {
    const count = await countContactsWithKey(trx, input.projectId, name.key);
    if (count <= threshold) {
      await removeKeyFromContacts(trx, input.projectId, name.key);
      return undefined;
    }
    const jobId = await createQueuedJob(trx, {
      projectId: input.projectId,
      kind: JobKind.fieldDelete,
      task: Tasks.contactsFieldDelete,
      priority: JobPriority.contacts,
      total: count,
      payload: { key: name.key },
    });
    return { jobId };
  });
}

const FieldDeletePayload = z.object({
  key: z.string(),
  cursor: z.object({ at: z.string(), id: z.uuid() }).optional(),
});

/**
 * The contacts-field-delete task. Each batch and its progress (count and resume cursor) commit
 * together, so a re-run continues where the last committed batch stopped.
 */
export async function runFieldDeleteJob(
  db: Kysely<Database>,
  jobId: string,
  opts: { signal?: AbortSignal; /** Contacts per batch. Default 2,000. */ scan?: number } = {},
): Promise<void> {
  if (!(await claimJob(db, jobId))) return;
  const scan = opts.scan ?? FIELD_DELETE_SCAN;
  for (let finished = false; !finished; ) {
    if (opts.signal?.aborted) throw new Error('stopping: the job resumes from its last batch on the next run');
    finished = await db.transaction().execute(async (trx) => {
      const job = await lockUnfinishedJob(trx, jobId);
      if (!job) return true;
      const { key, cursor } = FieldDeletePayload.parse(job.payload);
      const batch = await removeKeyBatch(trx, { projectId: job.project_id, key, after: cursor, scan });
      const done = batch.scanned < scan;
      await addJobProgress(trx, jobId, {
        processed: batch.updated,
        payload: batch.last ? { cursor: batch.last } : {},
        // Contacts may have gained or lost the key since the count: the total ends exact.
        ...(done && { status: 'COMPLETED' as const, total: job.processed + batch.updated }),
      });
      return done;
    });
  }
}
