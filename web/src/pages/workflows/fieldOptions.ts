import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { api, unwrap } from '@/api/client';
import { useProject } from '@/app/project';
import type { DataType } from '../segments/conditions';
import { type FieldGroup, type FieldOption, type FieldOptions, type OtherKey, useFieldOptions } from '../segments/fieldOptions';

const OTHER_EVENT_KEY: OtherKey = { prefix: 'event.', label: 'Other event key…', inputLabel: 'Event key', placeholder: 'key' };
const CONTEXT_KEY: OtherKey = { prefix: 'context.', label: 'Context key…', inputLabel: 'Context key', placeholder: 'key' };

/** A sampled JSON type as the builder's data type (objects, arrays and mixed keys: unknown). */
const dataTypeOf = (t: string): DataType => (t === 'string' || t === 'number' || t === 'boolean' || t === 'date' ? t : 'unknown');

/**
 * What a CONDITION step can address: the segment builder's fields (contact, data keys, tracked
 * events, email engagement, segments) plus the execution's `event.<key>` (the keys sampled from
 * the trigger event, GET /workflows/fields?eventName=, with their types) and `context.<key>`, both
 * also typed by hand. The builder runs in 'workflow' mode (an `event.` field is event data unless
 * its operator is an activity one).
 */
export function useWorkflowFieldOptions(triggerEvent: string): FieldOptions {
  const project = useProject();
  const base = useFieldOptions();
  const workflowFields = useQuery({
    queryKey: ['workflows', project.id, 'fields', triggerEvent],
    queryFn: () => unwrap(api.GET('/workflows/fields', { params: { query: { eventName: triggerEvent } } })),
    staleTime: 60_000,
  });
  const list = workflowFields.data;
  const { groups: baseGroups, types: baseTypes, known: baseKnown } = base;
  const built = useMemo(() => {
    const types = new Map(baseTypes);
    const eventData: FieldOption[] = [];
    const tracked: FieldOption[] = [];
    for (const f of list?.data ?? []) {
      if (f.hint) continue;
      if (f.source === 'event') {
        types.set(f.field, dataTypeOf(f.type));
        eventData.push({ value: f.field, label: `${f.field.slice('event.'.length)} · ${f.type}` });
      } else if (f.source === 'trackedEvent') tracked.push({ value: f.field, label: f.field.slice('event.'.length) });
    }
    const groups: FieldGroup[] = [];
    for (const g of baseGroups) {
      if (g.tracked) {
        // The trigger event may not have been tracked yet: offer it anyway.
        groups.push({ label: 'Event data', options: eventData, other: OTHER_EVENT_KEY });
        groups.push({ label: 'Context', options: [], other: CONTEXT_KEY });
        const listed = new Set(g.options.map((o) => o.value));
        groups.push({ ...g, label: 'Tracked events', options: [...tracked.filter((o) => !listed.has(o.value)), ...g.options] });
      } else groups.push(g);
    }
    return { groups, types, known: new Set([...baseKnown, ...eventData.map((o) => o.value)]) };
  }, [list, baseGroups, baseTypes, baseKnown]);
  return {
    ...base,
    ...built,
    mode: 'workflow',
    isLoading: base.isLoading || workflowFields.isLoading,
    error: base.error ?? workflowFields.error,
    refetch: () => {
      base.refetch();
      void workflowFields.refetch();
    },
  };
}
