import type { Kysely } from 'kysely';
import { OPERATORS_BY_KIND } from '../../conditions/index.js';
import type { Database } from '../../db/schema.js';
import { listFields } from '../contacts/index.js';
import { sampleEventDataKeys } from '../events/index.js';
import type { WorkflowFields } from './workflows.schema.js';

type Field = WorkflowFields['data'][number];
type FieldType = Field['type'];

const KINDS: Record<string, keyof typeof OPERATORS_BY_KIND> = { email: 'email', subscribed: 'subscribed', createdAt: 'date', updatedAt: 'date' };
const TRACKED = [...OPERATORS_BY_KIND.event];
const EXECUTION = [...OPERATORS_BY_KIND.executionData];
const JSON_TYPES = ['string', 'number', 'boolean', 'object', 'array'] as const satisfies readonly FieldType[];
const asType = (t: string): FieldType => JSON_TYPES.find((j) => j === t) ?? 'any';

/**
 * GET /workflows/fields: what a CONDITION filter can address. The contact's standard fields and
 * data keys (contacts module: its GET /contacts/fields answer), then with `eventName` the data keys
 * seen on the latest 1,000 events of that name as `event.<key>` (the execution's event data), the
 * tracked event itself as `event.<name>` (triggered… operators), and the `event.<key>` /
 * `context.<key>` patterns as hints.
 */
export async function workflowFields(db: Kysely<Database>, projectId: string, eventName?: string): Promise<WorkflowFields> {
  const [contact, sample] = await Promise.all([listFields(db, projectId), eventName ? sampleEventDataKeys(db, projectId, eventName) : undefined]);
  const data: Field[] = contact.data.map((f) => ({
    field: f.field,
    source: f.standard ? 'contact' : 'data',
    type: f.type,
    operators: [...OPERATORS_BY_KIND[f.standard ? (KINDS[f.field] ?? 'data') : 'data']],
    hint: false,
    ...(!f.standard && { count: f.count }),
  }));
  for (const k of sample?.keys ?? []) {
    data.push({ field: `event.${k.key}`, source: 'event', type: asType(k.type), operators: EXECUTION, hint: false, count: k.count });
  }
  if (eventName) data.push({ field: `event.${eventName}`, source: 'trackedEvent', type: 'any', operators: TRACKED, hint: false });
  data.push(
    { field: 'event.<key>', source: 'event', type: 'any', operators: EXECUTION, hint: true },
    { field: 'context.<key>', source: 'context', type: 'any', operators: EXECUTION, hint: true },
  );
  return { data, eventName: eventName ?? null, sampledEvents: sample?.sampled ?? 0 };
}
