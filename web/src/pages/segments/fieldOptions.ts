import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import { api, unwrap } from '@/api/client';
import type { components } from '@/api/schema';
import { useProject } from '@/app/project';
import { type ConditionMode, type DataType, type DataTypes, EMAIL_MILESTONES } from './conditions';

export type Segment = components['schemas']['Segment'];

export interface FieldOption {
  value: string;
  label: string;
}
/** An entry of a group for a key typed by hand: picking it shows a text input for `<prefix><key>`. */
export interface OtherKey {
  prefix: 'data.' | 'event.' | 'context.';
  /** The picker's entry ("Other data key…"). */
  label: string;
  /** The text input's accessible name and placeholder. */
  inputLabel: string;
  placeholder: string;
}
export interface FieldGroup {
  label: string;
  options: FieldOption[];
  other?: OtherKey;
  /**
   * Workflow mode: the group's `event.<name>` fields are tracked events (activity operators), not
   * the execution's event data (which another group lists under the same `event.` prefix).
   */
  tracked?: boolean;
}

export interface FieldOptions {
  groups: FieldGroup[];
  /** 'workflow': a CONDITION step's condition, with event./context. execution fields (default 'segment'). */
  mode?: ConditionMode;
  /** Seen type of each data key (`data.<key>` → type). */
  types: DataTypes;
  /** Display name of a field (segment names for `segment.<id>`). */
  labelOf: (field: string) => string;
  /** Known `data.<key>` and `event.<name>` fields (others are typed by hand). */
  known: ReadonlySet<string>;
  isLoading: boolean;
  error: unknown;
  refetch: () => void;
}

export const segmentsKey = (projectId: string) => ['segments', projectId] as const;
export const segmentKey = (projectId: string, id: string) => ['segment', projectId, id] as const;

const STANDARD: FieldOption[] = [
  { value: 'email', label: 'Email address' },
  { value: 'subscribed', label: 'Subscribed' },
  { value: 'createdAt', label: 'Created' },
  { value: 'updatedAt', label: 'Updated' },
];

export const OTHER_DATA_KEY: OtherKey = { prefix: 'data.', label: 'Other data key…', inputLabel: 'Data key', placeholder: 'key' };
export const OTHER_EVENT: OtherKey = { prefix: 'event.', label: 'Other event…', inputLabel: 'Event name', placeholder: 'event name' };

const MILESTONE_LABELS: Record<(typeof EMAIL_MILESTONES)[number], string> = {
  sent: 'Email sent',
  delivered: 'Email delivered',
  opened: 'Email opened',
  clicked: 'Email link clicked',
  bounced: 'Email bounced',
  complained: 'Marked as spam',
};

/**
 * What a condition can be about in this project: contact fields, data keys with their seen
 * types (GET /contacts/fields), events (GET /events/names), email engagement, and the other
 * segments (GET /segments, without `excludeSegmentId`: a segment cannot reference itself).
 */
export function useFieldOptions(excludeSegmentId?: string): FieldOptions {
  const project = useProject();
  const fields = useQuery({ queryKey: ['contacts', 'fields', project.id], queryFn: () => unwrap(api.GET('/contacts/fields')), staleTime: 30_000 });
  const events = useQuery({ queryKey: ['events', 'names', project.id], queryFn: () => unwrap(api.GET('/events/names')), staleTime: 30_000 });
  const segments = useQuery({ queryKey: segmentsKey(project.id), queryFn: () => unwrap(api.GET('/segments')) });

  const fieldList = fields.data;
  const eventList = events.data;
  const segmentList = segments.data;
  const built = useMemo(() => {
    const types = new Map<string, DataType>();
    const data: FieldOption[] = [];
    for (const f of fieldList?.data ?? []) {
      if (f.standard) continue;
      types.set(f.field, f.type);
      data.push({ value: f.field, label: `${f.key} · ${f.type}` });
    }
    const eventOptions = (eventList?.data ?? []).map((e) => ({ value: `event.${e.name}`, label: e.name }));
    const segmentOptions = (segmentList ?? []).filter((s) => s.id !== excludeSegmentId).map((s) => ({ value: `segment.${s.id}`, label: s.name }));
    const milestones = EMAIL_MILESTONES.map((m) => ({ value: `email.${m}`, label: MILESTONE_LABELS[m] }));
    const groups: FieldGroup[] = [
      { label: 'Contact', options: STANDARD },
      { label: 'Data', options: data, other: OTHER_DATA_KEY },
      { label: 'Events', options: eventOptions, other: OTHER_EVENT, tracked: true },
      { label: 'Email engagement', options: milestones },
      { label: 'Segments', options: segmentOptions },
    ];
    const labels = new Map(groups.flatMap((g) => g.options.map((o) => [o.value, o.label] as const)));
    const segmentNames = new Map((segmentList ?? []).map((s) => [`segment.${s.id}`, s.name]));
    const known = new Set([...data.map((o) => o.value), ...eventOptions.map((o) => o.value)]);
    return {
      groups,
      types,
      known,
      labelOf: (field: string) => segmentNames.get(field) ?? labels.get(field) ?? field,
    };
  }, [fieldList, eventList, segmentList, excludeSegmentId]);
  return {
    ...built,
    isLoading: fields.isLoading || events.isLoading || segments.isLoading,
    error: fields.error ?? events.error ?? segments.error,
    refetch: () => {
      void fields.refetch();
      void events.refetch();
      void segments.refetch();
    },
  };
}
